# attack: a tool request holding a 100,000-digit integer
# expect: protocol
import json, random

os = random._os
req = json.loads(os.sys.argv[1])["req_fd"]
os.write(
    req, b'{"type": "tool", "tool": "execute_query", "args": {"n": ' + b"9" * 100_000 + b"}}\n"
)
import time

time.sleep(30)
