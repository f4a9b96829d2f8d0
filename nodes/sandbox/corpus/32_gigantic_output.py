# attack: prints without end
# expect: output truncated
while True:
    print('A' * 1000)
