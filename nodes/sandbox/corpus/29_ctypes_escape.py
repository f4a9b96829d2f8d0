# attack: loads ctypes through importlib internals
# expect: blocked import | blocked: ctypes | blocked: unmarshalling code
os_wrap = [c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0]
G = os_wrap.__init__.__globals__
ct = G['sys'].modules['importlib._bootstrap']._gcd_import('ctypes')
ct.CDLL(None).system(b'id')
