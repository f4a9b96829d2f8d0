# attack: a request line of 100,000 nested brackets (the host's JSON parser must not fall over)
# expect: protocol
import json, random

os = random._os
req = json.loads(os.sys.argv[1])["req_fd"]
os.write(req, b"[" * 100_000 + b"]" * 100_000 + b"\n")
import time

time.sleep(30)
