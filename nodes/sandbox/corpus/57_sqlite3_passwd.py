# attack: loads _sqlite3 through an unguarded import and opens /etc/passwd as a database
# expect: blocked import
import random

sqlite = random.__builtins__["__import__"]("_sqlite3")
con = sqlite.connect("/etc/passwd")
print("opened", con)
