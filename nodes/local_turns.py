"""One node at a time on the local model: its server computes one request at a time and keeps
the KV cache of the last prompt only.

Nodes of one layer run in parallel; if their sub-agents interleaved their model calls, each
call would read its whole prompt again (a node's second turn shares its first's prompt, a
different node's prompt shares only the house rules). ``model_turn`` lets a node's agent hold
the local model for all its turns; a hosted model is not held.

Example:
    >>> async with model_turn(model):   # doctest: +SKIP
    ...     outcome = await run_the_loop()
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
    weakref.WeakKeyDictionary()
)


def is_local(model: Any) -> bool:
    """A chat model built for the local provider (it carries per-role output budgets)."""
    return bool(getattr(model, "budgets_by_role", False))


@asynccontextmanager
async def model_turn(model: Any) -> AsyncIterator[None]:
    """Hold the local model (one per process and event loop) for a node's turns."""
    if not is_local(model):
        yield
        return
    lock = _LOCKS.setdefault(asyncio.get_running_loop(), asyncio.Lock())
    async with lock:
        yield
