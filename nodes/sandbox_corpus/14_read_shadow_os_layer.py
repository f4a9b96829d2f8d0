# attack: reads /etc/shadow with the guard off: the unprivileged uid holds
# expect: permission denied
# guard: off
print(open('/etc/shadow').read())
