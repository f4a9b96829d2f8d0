# attack: kills pid 1 through random._os
# expect: blocked: signal
import random
random._os.kill(1, 9)
