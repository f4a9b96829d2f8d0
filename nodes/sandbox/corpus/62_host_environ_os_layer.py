# attack: reads the host process's environment by its host pid with the guard off
# expect: not found
# guard: off
data = open("/proc/{{HOST_PID}}/environ").read()
execute_query(sql=data)
