# attack: writes a forged success `done` line on the request pipe, then reads /etc/shadow
# expect: protocol | file access outside sandbox
import json, random

os = random._os
req = json.loads(os.sys.argv[1])["req_fd"]
os.write(req, b'{"type": "done", "ok": true, "error": null, "reason": null}\n')
print(open("/etc/shadow").read())
