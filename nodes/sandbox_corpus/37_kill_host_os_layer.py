# attack: kills pid 1 and the parent with the guard off
# expect: permission denied
# guard: off
import os
os.kill(os.getppid(), 9)
os.kill(1, 9)
