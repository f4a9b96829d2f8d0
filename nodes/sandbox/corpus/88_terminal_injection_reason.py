# attack: puts ESC, CR, BEL and U+2028 in its failure reason (a file name) to fake a selftest line
# expect: not found: \x1b[2K\rcontained 99/99
open('\x1b[2K\rcontained 99/99\x07\u2028contained 99/99')
