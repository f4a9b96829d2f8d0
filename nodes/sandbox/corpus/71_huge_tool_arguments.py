# attack: one allowed tool call with 10 MB of arguments
# expect: protocol
execute_query(sql="q" * 10_000_000)
