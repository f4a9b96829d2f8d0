# attack: fills anonymous memfd files (kernel-held memory, outside RLIMIT_AS) and holds them
# expect: memory limit | permission denied
# cpu: 3  (the kernel's reclaim at the cap is CPU time; the memory cap must stop it, not CPU)
import random
import time

os = random._os  # memfd_create and write raise no audit event
chunk = b'x' * (1 << 20)
files = []
while True:
    try:
        fd = os.memfd_create('fill')
    except OSError as e:
        if e.errno != 24:  # EMFILE: every descriptor holds a full file; keep them
            raise
        break
    files.append(fd)
    try:
        while True:
            os.write(fd, chunk)
    except OSError as e:
        if e.errno != 27:  # EFBIG: this file reached RLIMIT_FSIZE; start the next
            raise
while True:
    time.sleep(1)
