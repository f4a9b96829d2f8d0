"""The program the sandbox runs for a model-written tool (``tools/jailed.py``): the tool's file,
then each case, one result line per case after a nonce.

The program imports nothing of sopgraph: it brings a small ``Verdict`` of its own (the file's
import of the real one and its ``__future__`` imports are taken out), a ``ctx`` whose
``ctx.mcp.call`` goes to the host through the sandbox's ``call_tool``, and a loop that drives
the tool's coroutine without an event loop.
"""

from __future__ import annotations

import json
import re
from typing import Any

_VERDICT_IMPORT = re.compile(r"^\s*from\s+sopgraph\.graphs\.model\s+import\s+Verdict\s*$", re.M)
_FUTURE = re.compile(r"^\s*from\s+__future__\s+import\s+[\w, ()]+$", re.M)


def harness(code: str, cases: list[dict[str, Any]], nonce: str) -> str:
    """The program the sandbox runs: the candidate, then each case, one result line per case."""
    source = _FUTURE.sub("", _VERDICT_IMPORT.sub("", code))
    return _HARNESS.format(source=repr(source), cases=repr(json.dumps(cases)), nonce=repr(nonce))


# Runs inside the sandbox. `call_tool`, `ToolError` and `ToolNotAllowed` are the sandbox's.
_HARNESS = """
import json

_SOURCE = {source}
_CASES = json.loads({cases})
_NONCE = {nonce}


class Verdict:
    def __init__(self, value=None, observed=None, threshold=None, explanation=""):
        # as the real Verdict does: booleans become "true" / "false"
        self.value = {{True: "true", False: "false"}}.get(value, value) if isinstance(value, bool) else value
        self.observed = observed
        self.threshold, self.explanation = threshold, explanation


class _Mcp:
    def __init__(self):
        self.calls = 0

    async def call(self, server, tool, args=None):
        self.calls += 1
        return call_tool(str(server) + "." + str(tool), dict(args or {{}}))


class _Ctx:
    def __init__(self, case, mcp):
        self.params, self.input = case["params"], case["input"]
        self.parents = {{k: Verdict(**v) for k, v in case.get("parents", {{}}).items()}}
        self.node_id, self.text, self.mcp = case["node_id"], case["text"], mcp


def _drive(coro):
    # No event loop in the sandbox: the tool's awaits complete synchronously.
    try:
        while True:
            coro.send(None)
    except StopIteration as stop:
        return stop.value


def _plain(x):
    try:
        json.dumps(x)
        return x
    except (TypeError, ValueError):
        return repr(x)[:200]


_ns = {{"__name__": "candidate", "Verdict": Verdict}}
exec(compile(_SOURCE, "<candidate>", "exec"), _ns)
_run = _ns["run"]
for _i, _case in enumerate(_CASES):
    _mcp = _Mcp()
    _row = {{"i": _i}}
    try:
        _v = _drive(_run(_case["input"], _Ctx(_case, _mcp)))
        _row.update(value=getattr(_v, "value", repr(_v)[:80]), observed=_plain(getattr(_v, "observed", None)),
                    threshold=_plain(getattr(_v, "threshold", None)),
                    explanation=_plain(getattr(_v, "explanation", "")))
    except (ImportError, ToolNotAllowed):
        raise  # a blocked import or tool stops the run: the sandbox reports why
    except Exception as _exc:
        _row["error"] = type(_exc).__name__ + ": " + str(_exc)[:400]
    _row["calls"] = _mcp.calls
    print(_NONCE + " " + json.dumps(_row, default=str), flush=True)
"""
