# attack: builds a code object with marshal (reached via sys.modules) to run crafted bytecode
# expect: blocked: unmarshalling code
import random

marshal = random._os.sys.modules["marshal"]
code = marshal.loads(marshal.dumps(compile("print(1)", "x", "exec")))
exec(code)
