# attack: fork bomb with the Python guard off: seccomp and RLIMIT_NPROC hold
# expect: process limit
# guard: off
import os
while True:
    os.fork()
