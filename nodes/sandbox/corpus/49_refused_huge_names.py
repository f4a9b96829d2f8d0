# attack: floods the host with refused tool calls whose names are 500 KB, never reading a reply
# expect: protocol
import json, random

os = random._os
req = json.loads(os.sys.argv[1])["req_fd"]
line = json.dumps({"type": "tool", "tool": "x" * 500_000, "args": {}}).encode() + b"\n"
while True:
    os.write(req, line)
