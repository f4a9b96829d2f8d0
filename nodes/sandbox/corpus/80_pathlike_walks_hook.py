# attack: opens a path-like object whose __fspath__ walks up into the audit hook's frame
# expect: file access through a path-like object | file access outside sandbox: /etc/passwd
class P:
    def __fspath__(self):
        import random

        f = random._os.sys._getframe(1)
        print("in hook frame", f.f_code.co_name, list(f.f_locals))
        return "/etc/passwd"


print(open(P()).read())
