# attack: digs the unguarded import out of the guarded __import__'s closure and loads glob (outside the list)
# expect: blocked import
found = None
for cell in __import__.__closure__ or ():
    value = cell.cell_contents
    if callable(value) and getattr(value, "__name__", "") == "__import__":
        found = value
    elif isinstance(value, dict) and callable(value.get("__import__")):
        found = value["__import__"]
mod = found("glob")
print("loaded", mod.glob("/etc/*"))
