# attack: lists every process and its command line with the guard off and sends them out
# expect: ok
# guard: off
# stdout: pids=1
import os

pids = [p for p in os.listdir("/proc") if p.isdigit()]
cmds = {p: open(f"/proc/{p}/cmdline", "rb").read()[:200].decode(errors="replace") for p in pids}
execute_query(sql=repr(cmds))
print(f"pids={len(pids)}")
