# attack: busy infinite loop
# expect: cpu limit
while True:
    pass
