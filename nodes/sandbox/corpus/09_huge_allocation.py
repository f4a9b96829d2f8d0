# attack: one 100 GB allocation
# expect: memory limit
x = bytearray(100 * 2**30)
