# attack: grows a list of 10 MB strings until memory runs out
# expect: memory limit
chunks = []
while True:
    chunks.append('x' * 10_000_000)
