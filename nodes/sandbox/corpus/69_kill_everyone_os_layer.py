# attack: signals every process it can see (-1) and its group with the guard off
# expect: ok | permission denied
# guard: off
# stdout: still here
import os, signal

for target in (-1, 0):
    try:
        os.kill(target, signal.SIGKILL)
    except OSError:
        pass
print("still here")
