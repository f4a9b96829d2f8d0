# attack: walks traceback frames to the runner, calls its reporting functions with success, then imports os
# expect: blocked import: os
try:
    raise ValueError
except ValueError as e:
    frame = e.__traceback__.tb_frame
while frame is not None:
    for name, fn in list(frame.f_locals.items()):
        if name in ("report", "detail") and callable(fn):
            try:
                fn(True, None, None) if name == "report" else fn(None, None)
            except Exception:
                pass
    frame = frame.f_back
import os
