# attack: reads the host's environment through /proc/1/environ
# expect: permission denied
# guard: off
print(open('/proc/1/environ').read())
