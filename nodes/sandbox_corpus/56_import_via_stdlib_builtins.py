# attack: calls the real __import__ from an allowed module's __builtins__ to load zipfile
# expect: blocked import
import random

real = random.__builtins__["__import__"]
print(real("zipfile"))
