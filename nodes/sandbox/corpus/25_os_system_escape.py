# attack: os.system reached through __subclasses__ globals
# expect: blocked: os.system
os_wrap = [c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0]
G = os_wrap.__init__.__globals__
G['system']('touch {{CANARY_DIR}}/PWNED')
