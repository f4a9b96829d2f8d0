# attack: ignores every catchable signal and sleeps past the wall clock with the guard off
# expect: timeout
# guard: off
import signal, time

for sig in signal.valid_signals():
    try:
        signal.signal(sig, signal.SIG_IGN)
    except (OSError, ValueError):
        pass
while True:
    time.sleep(1)
