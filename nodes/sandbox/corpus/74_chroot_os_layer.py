# attack: calls chroot with the guard off: the seccomp filter kills the process
# expect: blocked syscall
# guard: off
import os

os.chroot("/")
print("ESCAPED")
