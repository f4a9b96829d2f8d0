# attack: calls a forbidden tool and swallows the refusal
# expect: tool not allowed: delete_everything
try:
    call_tool('delete_everything', {})
except Exception:
    pass
print('carried on')
