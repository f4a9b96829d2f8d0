# attack: executes a module body compiled under the stdlib name of a module outside the list
# expect: blocked import
src = open("/dev/null").read() if False else 'import os\nos.system("id")\n'
exec(compile(src, "/usr/lib/python3.11/zipfile.py", "exec"), {"__builtins__": __builtins__})
