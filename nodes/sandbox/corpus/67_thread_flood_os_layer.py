# attack: starts threads without end with the guard off: RLIMIT_NPROC holds
# expect: error: RuntimeError | process limit | memory limit
# guard: off
import _thread, time

while True:
    _thread.start_new_thread(time.sleep, (30,))
