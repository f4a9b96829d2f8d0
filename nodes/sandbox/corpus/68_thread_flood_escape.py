# attack: starts threads through _thread found in sys.modules (RLIMIT_NPROC stops them)
# expect: blocked: _thread.start_new_thread | error: RuntimeError | process limit
import random, time

th = random._os.sys.modules["_thread"]
while True:
    th.start_new_thread(time.sleep, (30,))
