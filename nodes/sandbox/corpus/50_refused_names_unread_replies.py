# attack: refused tool calls with 200 KB names (under the request limit), replies never read
# expect: tool call flood | timeout
import json, random

os = random._os
req = json.loads(os.sys.argv[1])["req_fd"]
line = json.dumps({"type": "tool", "tool": "y" * 200_000, "args": {}}).encode() + b"\n"
while True:
    os.write(req, line)
