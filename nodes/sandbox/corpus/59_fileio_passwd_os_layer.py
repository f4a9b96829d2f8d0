# attack: reads /etc/passwd through _io.FileIO with the guard off and sends it through a tool
# expect: not found
# guard: off
import _io

data = _io.FileIO("/etc/passwd").read()
execute_query(sql=data.decode())
