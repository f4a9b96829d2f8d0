# attack: loads the _ctypes extension by its file path with the guard off (not in its root)
# expect: not found | error: FileNotFoundError | error: ImportError | error: ModuleNotFoundError
# guard: off
import _imp, importlib.machinery as m

path = "/usr/lib/python3.11/lib-dynload/_ctypes.cpython-311-x86_64-linux-gnu.so"
spec = m.ModuleSpec("_ctypes", m.ExtensionFileLoader("_ctypes", path), origin=path)
print(_imp.create_dynamic(spec))
