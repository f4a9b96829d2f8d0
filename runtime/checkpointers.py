"""The checkpoint stores a session runs on (a SQLite file, Postgres, memory) and how it sets
them up: which ones track their nodes and journal them, and when invocation rows are written."""

from __future__ import annotations

import asyncio
from collections import Counter
from contextlib import asynccontextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sopgraph.tools.invocation_log import InvocationLog

LOG_HOLD_S = 0.1  # in-memory runs: the longest an invocation row waits for its group commit
# held while a session creates its tables in Postgres: sessions opening at once (queue workers
# starting together) would otherwise race on LangGraph's migration rows or on pg_type
SCHEMA_LOCK = 7305112
SCHEMA_POLL_S = 0.05  # how often a session waiting for it tries again


def open_checkpointer(spec: str | Path):
    """An async context manager yielding a checkpointer: a SQLite file, ``postgres://``, or
    ``memory`` (nothing persisted: batch evaluation and benchmarks)."""
    if str(spec) == "memory":
        from langgraph.checkpoint.memory import InMemorySaver

        return nullcontext(InMemorySaver())
    if str(spec).startswith(("postgres://", "postgresql://")):
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        return _postgres(AsyncPostgresSaver, str(spec))
    from sopgraph.runtime.sqlite_saver import open_sqlite_saver

    path = Path(spec)
    path.parent.mkdir(parents=True, exist_ok=True)
    return open_sqlite_saver(str(path))


@asynccontextmanager
async def schema_lock(conn: Any):
    """Hold ``SCHEMA_LOCK`` on the autocommit Postgres connection ``conn`` for the block: one
    session at a time creates its tables (``IF NOT EXISTS`` does not order two at once).

    Waiting is polling, not a blocking ``pg_advisory_lock``: a statement blocked on the lock
    is an open transaction, which the holder's ``CREATE INDEX CONCURRENTLY`` (a LangGraph
    migration) waits for: a deadlock."""
    from psycopg.rows import tuple_row

    while True:
        async with conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute("SELECT pg_try_advisory_lock(%s)", (SCHEMA_LOCK,))
            if (await cur.fetchone())[0]:
                break
        await asyncio.sleep(SCHEMA_POLL_S)
    try:
        yield
    finally:
        await conn.execute("SELECT pg_advisory_unlock(%s)", (SCHEMA_LOCK,))


class _postgres:
    def __init__(self, cls: Any, dsn: str):
        self.cm = cls.from_conn_string(dsn)

    async def __aenter__(self):
        saver = await self.cm.__aenter__()
        async with schema_lock(saver.conn):
            await saver.setup()
        return saver

    async def __aexit__(self, *exc: object):
        return await self.cm.__aexit__(*exc)


def checkpoint_id(snapshot: Any) -> str:
    """The id of the checkpoint a ``StateSnapshot`` shows ("" for none, or no snapshot)."""
    if snapshot is None:
        return ""
    return str((snapshot.config or {}).get("configurable", {}).get("checkpoint_id") or "")


def durability_mode(mode: str | None) -> str | None:
    """LangGraph's durability mode as given (None: the store's default), or one clear error."""
    if mode not in (None, "sync", "async", "exit"):
        from sopgraph.graphs.input_schema import InputError

        raise InputError(f"durability {mode!r}: give sync, async or exit")
    return mode


def track_nodes(saver: Any, journal: bool) -> Any:
    """Let a SQLite ``saver`` count its threads' running nodes and, with ``journal``, journal
    their results (``runtime/journal.py``); the saver when it journals, else None.

    Set before compiling: the compiler wraps each node for a saver that tracks its nodes."""
    from sopgraph.runtime.sqlite_saver import LoopSqliteSaver

    if not isinstance(saver, LoopSqliteSaver):
        return None
    saver.in_flight = Counter()
    saver.journaling = journal
    return saver if journal else None


def hold_log_rows(saver: Any, log: InvocationLog) -> bool:
    """Write the invocation rows in one commit for many calls instead of one per call; whether
    the rows held must be flushed when the session ends.

    A SQLite checkpoint first writes the rows held so far, so a run killed and resumed finds
    the row of every node it does not repeat. In memory nothing outlives the process: rows
    wait up to ``LOG_HOLD_S`` and go in one commit with other runs' rows (and always before
    the session ends or the log is read). Other stores (Postgres) keep one commit a call.
    """
    from langgraph.checkpoint.memory import InMemorySaver

    from sopgraph.runtime.sqlite_saver import LoopSqliteSaver

    if isinstance(saver, LoopSqliteSaver):
        saver.before_write = log.flush
        log.defer()
    elif isinstance(saver, InMemorySaver):
        log.defer(hold_s=LOG_HOLD_S)
    else:
        return False
    return True
