# attack: with the guard off, sends its own detail line (raw controls, a lone surrogate) and exits 1
# expect: \x1b[2K\r\x1b[32mcontained 99/99
# guard: off
import json
import os
import sys

fd = json.loads(sys.argv[1])['req_fd']
forged = '\x1b[2K\r\x1b[32mcontained 99/99\x1b[0m\x07\u2028\u202e\ud800'
line = json.dumps({'type': 'detail', 'error': forged + '\nTraceback\r\x1b[2J', 'reason': forged})
os.write(fd, (line + '\n').encode())
os._exit(1)
