# attack: calls an MCP tool the node is not allowed
# expect: tool not allowed: delete_everything
call_tool('delete_everything', {'confirm': True})
