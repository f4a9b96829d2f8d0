# attack: connects to loopback with the guard off
# expect: network disabled
# guard: off
import socket
socket.create_connection(('127.0.0.1', 22), timeout=2)
