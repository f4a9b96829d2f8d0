# attack: reads /etc/passwd with the guard off and sends it through a tool argument
# expect: not found
# guard: off
execute_query(sql=open("/etc/passwd").read())
