# attack: swaps a function's __code__ to patch code in place
# expect: blocked: replacing a function's code
def f():
    return 1
def g():
    return 2
f.__code__ = g.__code__
