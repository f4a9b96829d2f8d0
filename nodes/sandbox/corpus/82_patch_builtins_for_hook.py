# attack: replaces builtins the audit hook might call (len, type, isinstance, str) then reads /etc/passwd
# expect: file access outside sandbox
import random

b = random.__builtins__
b["len"] = lambda *a: 0
b["isinstance"] = lambda *a: False
b["issubclass"] = lambda *a: False
b["type"] = lambda *a: int
print(open("/etc/passwd").read())
