# attack: benign: writes and reads a scratch file in its own directory
# expect: ok
# stdout: 42
with open('scratch.txt', 'w') as f:
    f.write('42')
print(open('scratch.txt').read())
