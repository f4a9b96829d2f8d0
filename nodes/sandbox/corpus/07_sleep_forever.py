# attack: sleeps forever without using CPU
# expect: timeout
import time
while True:
    time.sleep(1)
