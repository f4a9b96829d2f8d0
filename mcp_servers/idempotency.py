"""An MCP action server's side of the idempotency key: a request carrying a key already done
gets the result recorded the first time, and the action is not performed again.

sopgraph sends each gated execution's key (``<thread>/<node>/<visit>``, the same when a killed
or retried run executes that action again) in ``params._meta`` under ``META_KEY``
(``graphs/idempotency.py``). A FastMCP tool honours it by doing its work through ``once``:

    store = Done("/var/lib/myserver/done.sqlite")

    @mcp.tool(annotations=CHANGE)
    def close_ticket(ticket_id: str, ctx: Context) -> dict:
        return store.once(request_key(ctx), lambda: really_close(ticket_id))

The record and the action's effect are not one transaction unless the action writes to the same
database: a server killed between the two repeats the action. Keep the record in the
database the action changes, in the same transaction, where that matters.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sopgraph.graphs.idempotency import META_KEY


def request_key(ctx: Any) -> str | None:
    """The idempotency key of the request a FastMCP ``Context`` serves, or None."""
    try:
        meta = ctx.request_context.meta
    except (AttributeError, LookupError, ValueError):  # outside a request
        return None
    if meta is None:
        return None
    extra = getattr(meta, "model_extra", None) or {}
    key = extra.get(META_KEY)
    return str(key)[:500] if key else None


class Done:
    """Keys done and their results, in a SQLite file (``:memory:`` for one process)."""

    def __init__(self, path: str | Path = ":memory:"):
        self.conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self.conn.execute("PRAGMA busy_timeout=30000")
        self.conn.execute("CREATE TABLE IF NOT EXISTS done (key TEXT PRIMARY KEY, result TEXT)")
        self.lock = threading.Lock()

    def once(self, key: str | None, action: Callable[[], Any]) -> Any:
        """``action()``'s result, performed once per ``key`` (every time when None)."""
        if key is None:
            return action()
        with self.lock:  # and across processes: the write lock, held while the action runs
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                row = self.conn.execute("SELECT result FROM done WHERE key = ?", (key,)).fetchone()
                if row is not None:
                    return json.loads(row[0])
                result = action()
                self.conn.execute("INSERT INTO done VALUES (?, ?)", (key, json.dumps(result)))
                return result
            finally:
                self.conn.execute("COMMIT")
