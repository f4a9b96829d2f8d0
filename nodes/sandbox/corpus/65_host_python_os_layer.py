# attack: lists /root, where the host's own Python lives, with the guard off
# expect: not found
# guard: off
import os

print(os.listdir("/root"))
