# attack: sends its mount table out through a tool argument with the guard off (host paths must not be in it)
# expect: ok
# guard: off
# stdout: mounts=
text = open("/proc/self/mountinfo").read()
execute_query(sql=text)
print(f"mounts={len(text.splitlines())}")
