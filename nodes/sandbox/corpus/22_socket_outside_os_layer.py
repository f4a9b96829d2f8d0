# attack: connects to an outside address with the guard off
# expect: network disabled
# guard: off
import socket
socket.create_connection(('93.184.216.34', 80), timeout=2)
