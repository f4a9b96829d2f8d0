"""The idempotency key of a gated execution: one key per action node visit of a run, the same
when a killed or retried run executes that action again, so an action server can tell a repeat
from a new request.

The key is ``<thread id>/<node id>/<visit>``. An action's tool reads it as
``ctx.idempotency_key``; every MCP call the tool makes while the action runs carries it in the
request's ``params._meta`` under ``META_KEY`` (``graphs/telemetry.mcp_meta``), so a server
honours it without the tool passing it on (``mcp_servers/idempotency.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

META_KEY = "sopgraph.dev/idempotency-key"
ACTION_KEY: ContextVar[str | None] = ContextVar("sopgraph_action_key", default=None)


def action_key(thread_id: str, node_id: str, visit: int) -> str:
    return f"{thread_id}/{node_id}/{visit}"


@contextmanager
def acting(key: str) -> Iterator[None]:
    """Inside: an action under ``key``, whose MCP calls may write (read-only deciding holds
    everywhere else) and carry the key. The compiler enters it for an approved gated action; a
    client that writes on a person's direct request (an eval's task) enters it itself."""
    token = ACTION_KEY.set(key)
    try:
        yield
    finally:
        ACTION_KEY.reset(token)
