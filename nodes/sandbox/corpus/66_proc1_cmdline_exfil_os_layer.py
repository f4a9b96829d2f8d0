# attack: sends /proc/1/cmdline out through a tool argument with the guard off (pid 1 is itself)
# expect: ok
# guard: off
# stdout: pid1=runner
cmd = open("/proc/1/cmdline", "rb").read().decode(errors="replace")
execute_query(sql=cmd[:300])
print("pid1=runner" if "Child side of the sandbox" in cmd else "pid1=other")
