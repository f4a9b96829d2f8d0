# attack: posix_spawn reached through random._os
# expect: blocked: subprocess
import random
random._os.posix_spawn('/bin/sh', ['sh', '-c', 'id'], {})
