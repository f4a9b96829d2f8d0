# attack: reads /etc/shadow with the guard off: absent from the minimal root (and the uid holds)
# expect: not found | permission denied
# guard: off
print(open('/etc/shadow').read())
