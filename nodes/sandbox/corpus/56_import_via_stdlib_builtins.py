# attack: calls the real __import__ from an allowed module's __builtins__ to load glob
# expect: blocked import
import random

real = random.__builtins__["__import__"]
print("loaded", real("glob"))
