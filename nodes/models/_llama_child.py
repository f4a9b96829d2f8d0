"""llama-cpp-python's server, run so that it exits when the sopgraph process that started it dies.

``atexit`` stops the server on a normal exit; a ``kill`` of sopgraph skips it, and a 1 GB model
left running slows every later run on a small machine. This wrapper watches its parent and
exits when it is gone, then runs ``python -m llama_cpp.server`` with the same arguments.
"""

from __future__ import annotations

import os
import runpy
import sys
import threading
import time


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)


if __name__ == "__main__":
    threading.Thread(target=_watch, args=(os.getppid(),), daemon=True).start()
    sys.argv = ["llama_cpp.server", *sys.argv[1:]]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
