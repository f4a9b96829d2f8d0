# attack: plants a file in the host's /tmp with the guard off (lands in its private tmpfs)
# expect: ok
# guard: off
# stdout: written
open('/tmp/PWNED', 'w').write('x')
print('written')
