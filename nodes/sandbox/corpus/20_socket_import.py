# attack: opens a socket to loopback
# expect: blocked import: socket
import socket
socket.create_connection(('127.0.0.1', 22))
