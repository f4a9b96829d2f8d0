# attack: plants files in / and in the stdlib with the guard off (both read-only)
# expect: permission denied
# guard: off
for path in ("/PWNED", "/usr/lib/PWNED"):
    try:
        open(path, "w").write("x")
    except OSError:
        pass
open("/usr/bin/PWNED", "w").write("x")
