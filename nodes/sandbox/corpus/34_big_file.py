# attack: writes a 100 MB file in its own directory
# expect: file size limit
with open('big.bin', 'wb') as f:
    for _ in range(100):
        f.write(b'0' * 2**20)
