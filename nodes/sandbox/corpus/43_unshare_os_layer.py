# attack: tries to leave its namespaces via ctypes with the guard off (ctypes is absent from its root)
# expect: error: ModuleNotFoundError | blocked syscall | permission denied
# guard: off
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x10000000 | 0x00020000) != 0:
    raise OSError(ctypes.get_errno(), 'unshare refused')
print('ESCAPED')
