# attack: finds the guard's functions through gc (reached via sys.modules) to patch them
# expect: blocked: gc | blocked import: gc
import random

gc = random._os.sys.modules.get("gc") or random.__builtins__["__import__"]("gc")
print(len(gc.get_objects()))
