"""One worker at a time on a thread: a Postgres session-level advisory lock keyed on the
thread id, held by the queue worker that runs the thread for the whole run.

The queue's heartbeat decides when a job is put back, not who may run it: a live worker whose
heartbeat is late (a GC pause, a starved CPU) has its job put back and taken by another while
it still runs it. The lock closes that gap. A worker that cannot take it does not run the
thread (``ThreadBusy``: its job goes back on the queue for later); when the holder finishes it
lets go, and when the holder dies Postgres ends its connection, which frees the lock, so the
run is never lost: the next delivery continues it from its checkpoint.

Example:
    >>> async with ThreadLocks(dsn, size=4) as locks:
    ...     async with locks.hold("valve:q1"):  # ThreadBusy if another worker runs it
    ...         await session.run(inp, thread_id="valve:q1")
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import psycopg
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

# A holder's machine that vanishes leaves no socket to close: the server probes the idle lock
# connection every few seconds and drops it (and the lock) after KEEPALIVE_S or so.
KEEPALIVE_S = 10
_SESSION = (
    f"SET tcp_keepalives_idle = {KEEPALIVE_S}; SET tcp_keepalives_interval = 5; "
    "SET tcp_keepalives_count = 3; SET idle_session_timeout = 0"  # idle the whole run
)
CONNECT_TIMEOUT_S = 5

log = logging.getLogger(__name__)


class ThreadBusy(Exception):
    """Another worker holds the thread's lock: it is running the thread now."""

    def __init__(self, thread_id: str):
        super().__init__(f"thread {thread_id} is being run by another worker")
        self.thread_id = thread_id


def lock_key(thread_id: str) -> int:
    """The advisory lock's bigint for ``thread_id``: 64 bits of its BLAKE2b hash (Postgres's
    ``hashtext`` has 32, so two threads in 4 billion would wait for each other)."""
    digest = hashlib.blake2b(b"sopgraph thread\0" + thread_id.encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big", signed=True)


async def _configure(conn: AsyncConnection) -> None:
    await conn.execute(_SESSION)


async def _release_all(conn: AsyncConnection) -> None:
    # a run cut short before its own unlock must not leave the thread locked in the pool
    await conn.execute("SELECT pg_advisory_unlock_all()")


class ThreadLocks:
    """A worker's lock connections: one per run in flight, each holding one thread's lock."""

    def __init__(self, dsn: str, size: int):
        self.pool = AsyncConnectionPool(
            dsn,
            min_size=1,
            max_size=size,
            open=False,
            kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S},
            configure=_configure,
            reset=_release_all,
        )

    async def __aenter__(self) -> ThreadLocks:
        await self.pool.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.pool.close()

    @asynccontextmanager
    async def hold(self, thread_id: str) -> AsyncIterator[None]:
        """Hold ``thread_id``'s lock inside the block; ``ThreadBusy`` if another holds it."""
        key = lock_key(thread_id)
        async with self.pool.connection() as conn:
            cur = await conn.execute("SELECT pg_try_advisory_lock(%s)", (key,))
            row = await cur.fetchone()
            if not (row and row[0]):
                raise ThreadBusy(thread_id)
            try:
                yield
            finally:
                await _unlock(conn, key, thread_id)


async def _unlock(conn: AsyncConnection, key: int, thread_id: str) -> None:
    try:
        cur = await conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        row = await cur.fetchone()
        held = bool(row and row[0])
    except psycopg.OperationalError:  # the pool drops the broken connection
        held = False
    if not held:  # the database restarted, or the network cut it: another may have run it
        log.warning("thread %s: its lock connection dropped during the run", thread_id)
