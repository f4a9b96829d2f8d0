# attack: allowed tool calls with 100 KB arguments as fast as the pipe takes them, replies unread
# expect: tool call flood | timeout
import json, random

os = random._os
req = json.loads(os.sys.argv[1])["req_fd"]
line = json.dumps({"type": "tool", "tool": "execute_query", "args": {"sql": "z" * 100_000}})
while True:
    os.write(req, line.encode() + b"\n")
