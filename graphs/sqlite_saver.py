"""LangGraph's SQLite checkpointer run on the event loop: short inline commits, shared by runs.

``AsyncSqliteSaver`` sends every cursor, execute and commit through aiosqlite's thread (about
eight thread hops per superstep); with WAL and ``synchronous=NORMAL`` a commit takes tens of
microseconds, less than one hop, so the synchronous ``SqliteSaver`` called inline costs the
event loop less. Same tables and format: either saver reads what the other wrote.

A finished task's writes are held for at most ``HOLD_S`` and committed with the superstep's
checkpoint, which in a chain of nodes follows at once: one commit per superstep instead of two
(and one invocation-log commit instead of two). A task whose sibling still runs has its writes
committed when ``HOLD_S`` ends, so a run killed then resumes without repeating it.

A checkpoint waits for the event loop's next turn, so the runs that end a superstep in the same
turn share one commit (and one invocation-log flush); each run's ``aput`` returns only once its
checkpoint is committed, so no run starts a superstep before the last one is on file.

Writes that reach the file in the same transaction as the checkpoint that applied them are not
stored at all (``superseded``): a resume starts from that checkpoint and never reads them. They
are half a superstep's SQLite work. What is lost is their copy in the history: a past
checkpoint's ``StateSnapshot.tasks`` shows no ``result`` (LangGraph's ``durability="exit"``
keeps none either). Interrupts, errors, resumes and Command updates are always stored.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, closing, contextmanager
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.sqlite import SqliteSaver

from sopgraph.graphs.sqlite_wal import WalCheckpoints, use_wal

BUSY_TIMEOUT_S = 30.0  # workers sharing the file wait for each other's commits
NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"  # LangGraph's, for writes no node made
HOLD_S = 0.002  # the longest a finished task's writes wait for their superstep's checkpoint


class LoopSqliteSaver(SqliteSaver):
    """``SqliteSaver`` whose async methods run the sync ones inline, in shared commits.

    ``aput_writes`` holds a task's writes (as Python values, no open transaction: other
    savers on the file are never blocked by one waiting here) until the next commit, a read
    of their thread, or ``HOLD_S``, whichever comes first. ``aput`` holds its checkpoint until
    the event loop's next turn and returns once it is committed: the checkpoints of all the runs
    that reached the end of a superstep in one turn share a transaction (group commit), and a
    run never starts its next superstep before its checkpoint is on file. ``before_write`` (if
    set) is called before each commit: a runner flushes the invocation rows it holds there, so
    a node's row is on disk before its checkpointed result.
    """

    before_write: Callable[[], None] | None = None
    wal: WalCheckpoints | None = None  # set by open_sqlite_saver
    _held: list[tuple[RunnableConfig, Sequence[tuple[str, Any]], str, str]]
    _puts: list[tuple[tuple[Any, ...], asyncio.Future[RunnableConfig]]]
    _timer: asyncio.TimerHandle | None = None  # the commit of held writes, HOLD_S away
    _soon: asyncio.Handle | None = None  # the commit of held checkpoints, on the next turn
    _batch = False  # inside write_held: the cursors leave the commit to it

    def __init__(self, conn: sqlite3.Connection, **kw: Any):
        super().__init__(conn, **kw)
        self._held = []
        self._puts = []

    @contextmanager
    def cursor(self, transaction: bool = True) -> Iterator[sqlite3.Cursor]:
        with super().cursor(transaction=transaction and not self._batch) as cur:
            yield cur

    def write_held(self) -> None:
        """Commit the held task writes and checkpoints in one transaction, and answer the
        ``aput`` calls waiting on those checkpoints (with ``put``'s result, or the error)."""
        for handle in (self._timer, self._soon):
            if handle is not None:
                handle.cancel()
        self._timer = self._soon = None
        held, self._held = self._held, []
        puts, self._puts = self._puts, []
        if not held and not puts:
            return
        try:
            if self.before_write is not None:
                self.before_write()
            self._batch = True
            try:
                checkpoints = [args for args, _ in puts]
                for args in held:
                    if not any(superseded(args, put) for put in checkpoints):
                        self.put_writes(*args)
                saved = [self.put(*args) for args in checkpoints]
            except BaseException:
                self.conn.rollback()
                raise
            finally:
                self._batch = False
            with self.lock:
                self.conn.commit()
        except BaseException as exc:
            self._held[:0] = held  # kept for the next commit to try again
            for _, fut in puts:
                if not fut.done():
                    fut.set_exception(exc)
            raise
        if self.wal is not None:
            self.wal.committed()
        for (_, fut), config in zip(puts, saved, strict=True):
            if not fut.done():  # its run may have been cancelled meanwhile
                fut.set_result(config)

    def _write_held_for(self, config: RunnableConfig | None) -> None:
        """Before a read: commit the held writes if any is of the thread read (or of any, when
        the read names no thread), so a read sees every write this saver was given."""
        thread = ((config or {}).get("configurable") or {}).get("thread_id")
        configs = [c for c, *_ in self._held] + [args[0] for args, _ in self._puts]
        if any(thread is None or c["configurable"]["thread_id"] == thread for c in configs):
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
        loop = asyncio.get_running_loop()
        saved = loop.create_future()
        self._puts.append(((config, checkpoint, metadata, new_versions), saved))
        if self._soon is None:  # the commit on the next turn takes the held writes too
            self._soon = loop.call_soon(self._commit_puts)
        return await saved

    def _commit_puts(self) -> None:
        self._soon = None
        try:
            self.write_held()
        except Exception:
            pass  # each waiting aput raises it; the held writes wait for the next commit

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


def superseded(writes: tuple[Any, ...], put: tuple[Any, ...]) -> bool:
    """Whether the checkpoint ``put`` (``put``'s arguments) already holds what the task writes
    ``writes`` (``put_writes``' arguments) say, so a resume never needs them.

    True when the checkpoint is the next one of the writes' thread (its parent is the one the
    task ran from, so LangGraph built it by applying that superstep's writes), the task is a
    node (not a Command's update), and every channel written is a state channel the checkpoint
    has a value of (not an interrupt, error or resume; not a ``DeltaChannel``, whose state is
    rebuilt from the writes).
    """
    config, channel_writes, task_id = writes[:3]
    put_config, checkpoint = put[:2]
    w, p = config["configurable"], put_config["configurable"]
    values = checkpoint["channel_values"]
    return (
        task_id != NULL_TASK_ID
        and w.get("checkpoint_id") is not None
        and w.get("checkpoint_id") == p.get("checkpoint_id")
        and w["thread_id"] == p["thread_id"]
        and w.get("checkpoint_ns", "") == p.get("checkpoint_ns", "")
        and all(ch not in WRITES_IDX_MAP and ch in values for ch, _ in channel_writes)
    )


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
