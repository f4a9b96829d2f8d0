# attack: tries to become root again with the guard off
# expect: permission denied
# guard: off
import os
os.setuid(0)
