# attack: tries to become root again with the guard off
# expect: permission denied | error: OSError
# guard: off
# (as root the host drops to a fresh uid: EPERM; unprivileged hosts use a user namespace
# where uid 0 is not even mapped: EINVAL)
import os
os.setuid(0)
