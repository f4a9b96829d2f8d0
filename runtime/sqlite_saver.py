"""LangGraph's SQLite checkpointer run on the event loop: short inline commits, shared by runs.

``AsyncSqliteSaver`` sends every cursor, execute and commit through aiosqlite's thread (about
eight thread hops per superstep); with WAL and ``synchronous=NORMAL`` a commit takes tens of
microseconds, less than one hop, so the synchronous ``SqliteSaver`` called inline costs the
event loop less. Same tables and format: either saver reads what the other wrote.

A finished task's writes are held and committed with the superstep's checkpoint, which in a
chain of nodes follows at once: one commit per superstep instead of two (and one invocation-log
commit instead of two). A node whose sibling still runs (``in_flight``: the running nodes of
each thread, counted by ``journal.DurableNode``) has its writes committed within ``HOLD_S``, so
a run killed while the sibling runs resumes without repeating it; other writes wait at most
``STEP_END_S`` for their checkpoint, and LangGraph starts no node of the run before that
checkpoint.

A checkpoint waits for the event loop's next turn, so the runs that end a superstep in the same
turn share one commit (and one invocation-log flush); each run's ``aput`` returns only once its
checkpoint is committed, so no run starts a superstep before the last one is on file.

Writes that reach the file in the same transaction as the checkpoint that applied them are not
stored at all (``superseded``): a resume starts from that checkpoint and never reads them. They
are half a superstep's SQLite work. What is lost is their copy in the history: a past
checkpoint's ``StateSnapshot.tasks`` shows no ``result`` (LangGraph's ``durability="exit"``
keeps none either). Interrupts, errors, resumes and Command updates are always stored.

The node journal (``runtime/journal.py``) is this saver's too: its rows go in the same commits.
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

from sopgraph.runtime.journal import JOURNAL_SQL, JOURNAL_TABLES, NodeJournal
from sopgraph.tools.sqlite_wal import WalCheckpoints, use_wal

BUSY_TIMEOUT_S = 30.0  # workers sharing the file wait for each other's commits
NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"  # LangGraph's, for writes no node made
# the longest a finished node's writes wait while another node of its run runs, and the longest
# a journal row waits for its commit
HOLD_S = 0.002
STEP_END_S = 0.05  # the longest they wait for their superstep's checkpoint otherwise


class LoopSqliteSaver(NodeJournal, SqliteSaver):
    """``SqliteSaver`` whose async methods run the sync ones inline, in shared commits.

    ``aput_writes`` holds a task's writes (as Python values, no open transaction: other
    savers on the file are never blocked by one waiting here) until their thread's next
    checkpoint, a read of their thread, or their deadline (``HOLD_S`` while another node of the
    run runs, or when ``in_flight`` is not set; ``STEP_END_S`` otherwise). ``aput`` holds its checkpoint until
    the event loop's next turn and returns once it is committed: the checkpoints of all the runs
    that reached the end of a superstep in one turn share a transaction (group commit), and a
    run never starts its next superstep before its checkpoint is on file. ``before_write`` (if
    set) is called before each commit: a runner flushes the invocation rows it holds there, so
    a node's row is on disk before its checkpointed result.
    """

    before_write: Callable[[], None] | None = None
    # thread -> nodes running now (counted by journal.DurableNode); None: every write waits at
    # most HOLD_S
    in_flight: Mapping[str, int] | None = None
    wal: WalCheckpoints | None = None  # set by open_sqlite_saver
    _held: list[tuple[float, tuple[RunnableConfig, Sequence[tuple[str, Any]], str, str]]]
    _puts: list[tuple[tuple[Any, ...], asyncio.Future[RunnableConfig]]]
    _timer: asyncio.TimerHandle | None = None  # the commit of the first held write due
    _timer_at = 0.0
    _soon: asyncio.Handle | None = None  # the commit of held checkpoints, on the next turn
    _batch = False  # inside write_held: the cursors leave the commit to it

    def __init__(self, conn: sqlite3.Connection, **kw: Any):
        super().__init__(conn, **kw)
        self._held = []
        self._puts = []
        self._init_journal()

    def setup(self) -> None:
        if not self.is_setup:  # the caller (SqliteSaver.cursor) may hold self.lock
            super().setup()
            self.conn.executescript(JOURNAL_SQL)

    @contextmanager
    def cursor(self, transaction: bool = True) -> Iterator[sqlite3.Cursor]:
        with super().cursor(transaction=transaction and not self._batch) as cur:
            yield cur

    def write_held(self, due_only: bool = False) -> None:
        """Commit the held task writes and checkpoints in one transaction, and answer the
        ``aput`` calls waiting on those checkpoints (with ``put``'s result, or the error).

        ``due_only`` (a commit made for checkpoints): a held write of a thread with no checkpoint
        in this commit stays held until its own checkpoint or its ``HOLD_S`` ends, instead of
        being stored now only because another run ended a superstep first.
        """
        for handle in (self._timer, self._soon):
            if handle is not None:
                handle.cancel()
        self._timer = self._soon = None
        held, self._held = self._held, []
        puts, self._puts = self._puts, []
        journal, settling = self._take_journal()
        if due_only:
            held = self._keep_undue(held, {a[0]["configurable"]["thread_id"] for a, _ in puts})
        if not held and not puts and not journal:
            return
        try:
            if self.before_write is not None:
                self.before_write()
            self._batch = True
            try:
                for sql, row in journal:
                    self.conn.execute(sql, row)
                checkpoints = [args for args, _ in puts]
                for _, args in held:
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
            self._restore_journal(journal)
            self._settled([f for _, f in puts] + settling, exc)
            raise
        if self.wal is not None:
            self.wal.committed()
        self._settled(settling)
        for (_, fut), config in zip(puts, saved, strict=True):
            if not fut.done():  # its run may have been cancelled meanwhile
                fut.set_result(config)

    def _keep_undue(self, held: list, threads: set[str]) -> list:
        """Of ``held``, the writes to commit now; the others (before their deadline, of a
        thread not in ``threads``) go back to waiting, on a timer for the earliest deadline."""
        loop = asyncio.get_running_loop()
        now, due = loop.time(), []
        for h in held:
            wait = h[0] > now and h[1][0]["configurable"]["thread_id"] not in threads
            (self._held if wait else due).append(h)
        if self._held:
            self._arm(min(at for at, _ in self._held))
        return due

    def _arm(self, at: float) -> None:
        """Make sure a commit of the due writes runs at loop time ``at`` or earlier."""
        if self._timer is None or at < self._timer_at:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = asyncio.get_running_loop().call_at(at, self._commit_due)
            self._timer_at = at

    def _write_held_for(self, config: RunnableConfig | None) -> None:
        """Before a read: commit the held writes and journal rows if any is of the thread read
        (or of any, when the read names no thread), so a read sees everything this saver was
        given."""
        thread = ((config or {}).get("configurable") or {}).get("thread_id")
        configs = [args[0] for _, args in self._held] + [args[0] for args, _ in self._puts]
        threads = [c["configurable"]["thread_id"] for c in configs]
        threads += self._journal_threads()
        if any(thread is None or t == thread for t in threads):
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
        self._commit_soon(loop)
        return await saved

    def _arm_hold(self) -> None:
        self._arm(asyncio.get_running_loop().time() + HOLD_S)

    def _commit_soon(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._soon is None:  # the commit on the next turn takes the held writes too
            self._soon = loop.call_soon(self._commit_due)

    def _commit_due(self) -> None:
        """The commit of the held checkpoints (on the next turn) or of the writes due."""
        waiting = bool(self._puts or self._settling)
        try:
            self.write_held(due_only=True)
        except Exception:
            if not waiting:
                raise  # the event loop's exception handler reports it
            # else each waiting aput raises it; the held writes wait for the next commit

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        # LangGraph does not touch a write's value once given; our reducers build new values
        thread = config["configurable"]["thread_id"]
        soon = (
            self.in_flight is None
            or self.in_flight.get(thread)  # a sibling still runs: this node must not rerun
            or any(ch in WRITES_IDX_MAP for ch, _ in writes)  # no checkpoint follows these
        )
        at = asyncio.get_running_loop().time() + (HOLD_S if soon else STEP_END_S)
        self._held.append((at, (config, writes, task_id, task_path)))
        self._arm(at)

    async def adelete_thread(self, thread_id: str) -> None:
        self.write_held()
        self.delete_thread(thread_id)

    def delete_thread(self, thread_id: str) -> None:
        super().delete_thread(thread_id)
        with self.lock, self.conn:
            for table in JOURNAL_TABLES:
                self.conn.execute(f"DELETE FROM {table} WHERE thread_id = ?", (thread_id,))

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
