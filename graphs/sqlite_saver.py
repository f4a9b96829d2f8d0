"""LangGraph's SQLite checkpointer run on the event loop: each write is one short inline commit.

``AsyncSqliteSaver`` sends every cursor, execute and commit through aiosqlite's thread (about
eight thread hops per superstep); with WAL and ``synchronous=NORMAL`` a commit takes tens of
microseconds, less than one hop, so the synchronous ``SqliteSaver`` called inline costs the
event loop less. Same tables and format: either saver reads what the other wrote.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, closing
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.sqlite import SqliteSaver

from sopgraph.graphs.sqlite_wal import WalCheckpoints

BUSY_TIMEOUT_S = 30.0  # workers sharing the file wait for each other's commits


class LoopSqliteSaver(SqliteSaver):
    """``SqliteSaver`` whose async methods run the sync ones inline.

    ``before_write`` (if set) is called before each write: a runner flushes the invocation
    rows it holds there, so a node's row is on disk before its checkpointed result.
    """

    before_write: Callable[[], None] | None = None
    wal: WalCheckpoints | None = None  # set by open_sqlite_saver

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
        if self.before_write is not None:
            self.before_write()
        saved = self.put(config, checkpoint, metadata, new_versions)
        if self.wal is not None:
            self.wal.committed()
        return saved

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        if self.before_write is not None:
            self.before_write()
        self.put_writes(config, writes, task_id, task_path)
        if self.wal is not None:
            self.wal.committed()

    async def adelete_thread(self, thread_id: str) -> None:
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
        yield saver


def _connect(path: str) -> closing[sqlite3.Connection]:
    conn = sqlite3.connect(path, check_same_thread=False, timeout=BUSY_TIMEOUT_S)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    return closing(conn)
