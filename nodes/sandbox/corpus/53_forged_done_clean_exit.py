# attack: writes a forged `done` line and a forged detail, then finishes normally
# expect: protocol
import json, random

os = random._os
req = json.loads(os.sys.argv[1])["req_fd"]
os.write(req, b'{"type": "detail", "error": null, "reason": null}\n')
os.write(req, b'{"type": "done", "ok": true}\n')
print("done forged")
