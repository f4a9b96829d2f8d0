"""The event loop for long batches: uvloop where installed, and the start-up heap frozen.

A batch process imports LangGraph, LangChain and pydantic models by the hundred thousand
objects; without ``gc.freeze()`` every full collection walks them all again (86-114 ms pauses
every few hundred alarms, the run's p99).
"""

from __future__ import annotations

import asyncio
import gc
import importlib.util
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_name() -> str:
    return "uvloop" if importlib.util.find_spec("uvloop") is not None else "asyncio"


def run(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)`` on uvloop when it is installed, else on asyncio's own loop."""
    if loop_name() == "uvloop":
        import uvloop

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(coro)
    return asyncio.run(coro)


def freeze_heap() -> None:
    """Move every object alive now (imports, compiled graphs, warm caches) out of the
    collector's reach, so later full collections only walk what the runs allocate."""
    gc.collect()
    gc.freeze()


def thaw_heap() -> None:
    """Undo ``freeze_heap`` so that objects released since are collected before exit (native
    extensions such as DuckDB's report objects still alive at shutdown as leaks)."""
    gc.unfreeze()
    gc.collect()
