"""LangGraph's SQLite checkpointer run on the event loop: one short inline commit per superstep.

``AsyncSqliteSaver`` sends every cursor, execute and commit through aiosqlite's thread (about
eight thread hops per superstep); with WAL and ``synchronous=NORMAL`` a commit takes tens of
microseconds, less than one hop, so the synchronous ``SqliteSaver`` called inline costs the
event loop less. Same tables and format: either saver reads what the other wrote.

A finished task's writes are held for at most ``HOLD_S`` and committed with the superstep's
checkpoint, which in a chain of nodes follows at once: one commit per superstep instead of two
(and one invocation-log commit instead of two). A task whose sibling still runs has its writes
committed when ``HOLD_S`` ends, so a run killed then resumes without repeating it.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, closing, contextmanager
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.sqlite import SqliteSaver

from sopgraph.graphs.sqlite_wal import WalCheckpoints, use_wal

BUSY_TIMEOUT_S = 30.0  # workers sharing the file wait for each other's commits
HOLD_S = 0.002  # the longest a finished task's writes wait for their superstep's checkpoint


class LoopSqliteSaver(SqliteSaver):
    """``SqliteSaver`` whose async methods run the sync ones inline.

    ``aput_writes`` holds a task's writes (as Python values, no open transaction: other
    savers on the file are never blocked by one waiting here) until the next ``aput``, a read
    of their thread, or ``HOLD_S``, whichever comes first; each is then one transaction. ``before_write`` (if
    set) is called before each commit: a runner flushes the invocation rows it holds there, so
    a node's row is on disk before its checkpointed result.
    """

    before_write: Callable[[], None] | None = None
    wal: WalCheckpoints | None = None  # set by open_sqlite_saver
    _held: list[tuple[RunnableConfig, Sequence[tuple[str, Any]], str, str]]
    _timer: asyncio.TimerHandle | None = None
    _batch = False  # inside write_held: the cursors leave the commit to it

    def __init__(self, conn: sqlite3.Connection, **kw: Any):
        super().__init__(conn, **kw)
        self._held = []

    @contextmanager
    def cursor(self, transaction: bool = True) -> Iterator[sqlite3.Cursor]:
        with super().cursor(transaction=transaction and not self._batch) as cur:
            yield cur

    def write_held(self, checkpoint: tuple[Any, ...] | None = None) -> RunnableConfig | None:
        """Commit the held task writes, and ``checkpoint`` (``put``'s arguments) if given, in
        one transaction; return what ``put`` returned."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        held, self._held = self._held, []
        if not held and checkpoint is None:
            return None
        if self.before_write is not None:
            self.before_write()
        saved = None
        self._batch = True
        try:
            for args in held:
                self.put_writes(*args)
            if checkpoint is not None:
                saved = self.put(*checkpoint)
        except BaseException:
            self.conn.rollback()
            self._held[:0] = held  # kept for the next commit to try again
            raise
        finally:
            self._batch = False
        with self.lock:
            self.conn.commit()
        if self.wal is not None:
            self.wal.committed()
        return saved

    def _write_held_for(self, config: RunnableConfig | None) -> None:
        """Before a read: commit the held writes if any is of the thread read (or of any, when
        the read names no thread), so a read sees every write this saver was given."""
        thread = ((config or {}).get("configurable") or {}).get("thread_id")
        if any(thread is None or c["configurable"]["thread_id"] == thread for c, *_ in self._held):
            self.write_held()

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        self._write_held_for(config)
        return super().get_tuple(config)

    def list(self, config: RunnableConfig | None, **kw: Any) -> Iterator[CheckpointTuple]:
        self._write_held_for(config)
        return super().list(config, **kw)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.get_tuple(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        for item in self.list(config, filter=filter, before=before, limit=limit):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        saved = self.write_held((config, checkpoint, metadata, new_versions))
        assert saved is not None
        return saved

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        # LangGraph does not touch a write's value once given; our reducers build new values
        self._held.append((config, writes, task_id, task_path))
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(HOLD_S, self.write_held)

    async def adelete_thread(self, thread_id: str) -> None:
        self.write_held()
        self.delete_thread(thread_id)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, Any]:
        return self.get_delta_channel_history(config=config, channels=channels)


@asynccontextmanager
async def open_sqlite_saver(path: str) -> AsyncIterator[LoopSqliteSaver]:
    """The saver over the file ``path`` in WAL mode with ``synchronous=NORMAL``: a commit is
    not fsynced, so it survives a killed process (the OS holds the written pages), not a power
    loss; with the default FULL every checkpoint write waits for the disk."""
    with _connect(path) as conn:
        saver = LoopSqliteSaver(conn)
        saver.wal = WalCheckpoints.for_file(path)
        saver.wal.adopt(conn)  # checkpoints run in a thread, not in a step's commit
        saver.setup()
        try:
            yield saver
        finally:
            saver.write_held()


def _connect(path: str) -> closing[sqlite3.Connection]:
    conn = sqlite3.connect(path, check_same_thread=False, timeout=BUSY_TIMEOUT_S)
    use_wal(conn)
    conn.execute("PRAGMA synchronous=NORMAL")
    return closing(conn)
