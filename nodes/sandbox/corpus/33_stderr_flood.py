# attack: floods stderr (sys reached through __subclasses__ globals)
# expect: output truncated
os_wrap = [c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0]
err = os_wrap.__init__.__globals__['sys'].stderr
while True:
    err.write('E' * 1000 + '\n')
