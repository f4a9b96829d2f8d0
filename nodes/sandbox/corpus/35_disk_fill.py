# attack: fills its disk with many 15 MB files
# expect: disk limit | file size limit
for i in range(100):
    with open(f'f{i}.bin', 'wb') as f:
        f.write(b'0' * 15 * 2**20)
