# attack: opens /etc/passwd with sqlite3 with the guard off (no _sqlite3 in its root)
# expect: error: ModuleNotFoundError | not found
# guard: off
import sqlite3

con = sqlite3.connect("/etc/passwd")
print(con.execute("select * from sqlite_master").fetchall())
