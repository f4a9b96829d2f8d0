# attack: replaces the runner with a shell via os.execv
# expect: blocked: exec
import random
random._os.execv('/bin/sh', ['sh', '-c', 'id'])
