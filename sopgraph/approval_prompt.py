"""``--approval ask`` at a terminal: each gated action a run pauses at is asked y/n on stdin.

Without a terminal (a pipe, a script, CI) nothing can be asked: the run pauses and one line on
stderr says how to answer it later.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from sopgraph.graphs.untrusted_text import printable
from sopgraph.report import resume_hint

YES = {"y", "yes"}
NO = {"n", "no"}


def can_ask() -> bool:
    """Whether a person can answer here: stdin is a terminal."""
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):  # closed or replaced stdin
        return False


def _question(intr: dict[str, Any]) -> str:
    node = intr.get("node") or "?"
    text = str(intr.get("action") or node)
    cost = f", cost {intr['cost']}" if intr.get("cost") else ""
    what = f" ({printable(text)}{cost})" if text != node or cost else ""
    return f"approve gated action {printable(str(node))}{what}? [y/n] "


async def _answer(intr: dict[str, Any]) -> str | None:
    """``approve`` or ``reject`` as typed; None at the end of input (the run stays paused)."""
    while True:
        print(_question(intr), end="", file=sys.stderr, flush=True)
        line = await asyncio.to_thread(sys.stdin.readline)
        if not line:
            print(file=sys.stderr)
            return None
        word = line.strip().lower()
        if word in YES:
            return "approve"
        if word in NO:
            return "reject"
        print("answer y or n", file=sys.stderr)


async def ask_pending(session: Any, result: Any, approver: str) -> Any:
    """Ask about each gated action ``result`` waits on and resume the run with each answer, until
    it no longer waits or input ends; the run's latest result."""
    while result.interrupts:
        intr = result.interrupts[0]
        decision = await _answer(intr)
        if decision is None:
            return result
        result = await session.resume(
            result.thread_id, decision, interrupt_id=intr.get("id"), approver=approver
        )
    return result


def paused_line(result: Any, sop: str) -> str:
    """The line a run paused without a terminal prints: what waits and how to answer it."""
    nodes = ", ".join(str(i.get("node")) for i in result.interrupts)
    verb = "needs" if len(result.interrupts) == 1 else "need"
    return printable(
        f"paused: {nodes} {verb} approval and stdin is not a terminal, so nothing was asked;"
        f" answer with `{resume_hint(sop, result.thread_id, result.interrupts)}` (or pass --approval approve|reject)"
    )
