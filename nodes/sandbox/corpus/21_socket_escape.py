# attack: loads socket through importlib internals found via __subclasses__
# expect: blocked import | network disabled | blocked: unmarshalling code
os_wrap = [c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0]
G = os_wrap.__init__.__globals__
sock = G['sys'].modules['importlib._bootstrap']._gcd_import('socket')
sock.create_connection(('127.0.0.1', 22))
