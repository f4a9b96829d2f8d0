# attack: reads the host's environment through /proc/1/environ (its own, empty, in its PID namespace)
# expect: ok | permission denied | not found
# guard: off
print(open('/proc/1/environ').read())
