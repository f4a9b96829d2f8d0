# attack: runs a shell through subprocess
# expect: blocked import: subprocess
import subprocess
subprocess.run(['sh', '-c', 'id'])
