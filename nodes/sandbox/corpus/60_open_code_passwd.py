# attack: reads /etc/passwd through io.open_code reached via sys.modules
# expect: file access outside sandbox | blocked import: _io
import random

io = random._os.sys.modules["io"]
print(io.open_code("/etc/passwd").read())
