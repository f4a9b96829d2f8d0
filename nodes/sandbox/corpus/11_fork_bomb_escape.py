# attack: fork bomb through random._os, dodging the import list
# expect: blocked: fork
import random
while True:
    random._os.fork()
