# attack: digs an unguarded import out of the guarded __import__ (its closure, else its globals' builtins) and loads glob
# expect: blocked import
found = None
for cell in __import__.__closure__ or ():
    value = cell.cell_contents
    if callable(value) and getattr(value, "__name__", "") == "__import__":
        found = value
    elif isinstance(value, dict) and callable(value.get("__import__")):
        found = value["__import__"]
if found is None:
    b = __import__.__globals__["__builtins__"]
    found = b["__import__"] if isinstance(b, dict) else b.__import__
mod = found("glob")
print("loaded", mod.glob("/etc/*"))
