# attack: compiles code under a stdlib filename to slip past the import allow-list, then os.system
# expect: blocked: os.system | blocked import: os
src = "import os\nos.system('id > /tmp/PWNED')\n"
exec(compile(src, '/usr/lib/python3.11/json/evil.py', 'exec'), {})
