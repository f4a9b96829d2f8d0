# attack: calls the node's allowed MCP tool
# expect: ok
# stdout: rows=2
rows = execute_query(sql='select station, idle_pct from idle')
print(f'rows={len(rows)}', max(r['idle_pct'] for r in rows))
