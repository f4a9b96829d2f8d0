# attack: fills memfd files with the guard off: the memory cgroup (or seccomp, without one) holds
# expect: memory limit | permission denied
# cpu: 3  (the kernel's reclaim at the cap is CPU time; the memory cap must stop it, not CPU)
# guard: off
import errno
import os
import time

chunk = b'x' * (1 << 20)
files = []
while True:
    try:
        fd = os.memfd_create('fill')
    except OSError as e:
        if e.errno != errno.EMFILE:
            raise
        break
    files.append(fd)
    try:
        while True:
            os.write(fd, chunk)
    except OSError as e:
        if e.errno != errno.EFBIG:
            raise
while True:
    time.sleep(1)
