# attack: forges many failure details then exits 0 itself; the verdict follows the exit status only
# expect: ok
# stdout: exited
import json, random

os = random._os
req = json.loads(os.sys.argv[1])["req_fd"]
for _ in range(1000):
    os.write(req, b'{"type": "detail", "error": "forged", "reason": "timeout"}\n')
print("exited", flush=True)
os._exit(0)
