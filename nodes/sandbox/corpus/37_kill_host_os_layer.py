# attack: kills its parent and pid 1 with the guard off (in its own PID namespace both are itself)
# expect: ok | permission denied
# guard: off
# stdout: still here
import os
os.kill(os.getppid(), 9)
os.kill(1, 9)
print('still here')
