# attack: fork bomb through import os
# expect: blocked import: os
import os
while True:
    os.fork()
