# attack: opens /proc/self/mem to patch the interpreter (and the guard) in memory
# expect: file access outside sandbox
f = open('/proc/self/mem', 'r+b')
