# attack: an allowed tool fails; the code handles the error
# expect: ok
# stdout: caught
try:
    flaky_metric(name='x')
except ToolError as e:
    print('caught', e)
