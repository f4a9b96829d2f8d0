# attack: starts threads without end
# expect: blocked import: threading
import threading
while True:
    threading.Thread(target=lambda: None).start()
