# attack: reads /etc/shadow
# expect: file access outside sandbox: /etc/shadow
print(open('/etc/shadow').read())
