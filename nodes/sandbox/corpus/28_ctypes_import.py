# attack: imports ctypes
# expect: blocked import: ctypes
import ctypes
ctypes.CDLL(None).system(b'id')
