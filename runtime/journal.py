"""The node journal: what a killed run needs to continue without repeating a node, kept outside
the nodes (as LangGraph's nodes never see their checkpointer).

A ``Session`` drives journaled runs with ``durability="exit"`` (LangGraph checkpoints once, when
the invocation ends or pauses) and records instead each invocation's payload
(``journal_invocation``) and each node's result (``journal_node``), committed before the run's
next node starts (``asettle`` waits for it), with the checkpoint, or within the saver's
``HOLD_S``, whichever comes first; the rows of all the runs that finished a node in one
event-loop turn share one commit. The rows stay with their thread (``delete_thread`` removes
them). A run killed before its checkpoint is continued by running the invocation again with the
recorded results given back (``REPLAY``) in place of running those nodes. LangGraph's
per-superstep checkpoint (the copy of every channel, the blob and its row) is the cost this
saves.

``NodeJournal`` is the saver's side (``runtime/sqlite_saver.py`` mixes it in); ``durable`` is the
node's side: the session has the compiler wrap each node function with it (``wrap_node``), and the wrapper is a no-op for a
store that does not track its nodes (in memory, Postgres, the LangGraph server's own).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

if TYPE_CHECKING:  # an annotation only: the saver need not load the compiler
    from sopgraph.graphs.compiler import NodeFunction

# the configurable key of a continued run's journaled node results, by ``journal_key``
REPLAY = "sopgraph_replay"
# what an invocation's run config keeps for its continuation (Session._config)
JOURNAL_CONFIG = ("approval", "approver", "sop_id", "sop_path")
JOURNAL_SQL = """
CREATE TABLE IF NOT EXISTS sopgraph_invocations (
    thread_id TEXT NOT NULL, parent TEXT NOT NULL, kind TEXT NOT NULL,
    type TEXT, payload BLOB, configurable TEXT NOT NULL, PRIMARY KEY (thread_id, parent));
CREATE TABLE IF NOT EXISTS sopgraph_nodes (
    thread_id TEXT NOT NULL, step INTEGER NOT NULL, task TEXT NOT NULL,
    type TEXT, value BLOB, PRIMARY KEY (thread_id, step, task));
"""
JOURNAL_TABLES = ("sopgraph_invocations", "sopgraph_nodes")
INSERT_INVOCATION = "INSERT OR IGNORE INTO sopgraph_invocations VALUES (?, ?, ?, ?, ?, ?)"
INSERT_NODE = "INSERT OR REPLACE INTO sopgraph_nodes VALUES (?, ?, ?, ?, ?)"


def journal_key(config: RunnableConfig) -> tuple[int, str]:
    """A node task's place in its run: the superstep and the task's path of node names
    (LangGraph's checkpoint namespace without its task ids, which differ on a continuation)."""
    meta = config.get("metadata") or {}
    ns = str(meta.get("langgraph_checkpoint_ns", ""))
    return int(meta.get("langgraph_step", 0)), "|".join(p.split(":")[0] for p in ns.split("|"))


@dataclass(frozen=True)
class Invocation:
    """A journaled invocation: ``kind`` start | resume | continue, its payload and config."""

    kind: str
    payload: Any
    configurable: dict[str, Any]

    def graph_input(self) -> Any:
        """What to drive the graph with to run this invocation again."""
        if self.kind == "start":
            return {"input": self.payload}
        if self.kind == "resume":
            return Command(resume=self.payload)
        return None


class NodeJournal:
    """The journal's rows in a ``LoopSqliteSaver``: held until the saver's next commit.

    The saver provides ``conn``, ``serde``, ``_arm_hold()`` (a commit within ``HOLD_S``),
    ``_commit_soon(loop)`` (a commit on the next turn) and ``_write_held_for(config)``; its
    commit takes ``_take_journal()`` and answers the runs waiting with ``_settled``.
    """

    # set by the session: the saver counts its threads' running nodes (``in_flight``) and
    # journals their results (``journaling``); the compiler then wraps each node (``durable``)
    in_flight: Any = None
    journaling = False
    _journal: list[tuple[str, tuple[Any, ...]]]  # rows for the next commit: (statement, row)
    _settling: list[asyncio.Future[None]]  # runs waiting for that commit (asettle)

    def _init_journal(self) -> None:
        self._journal = []
        self._settling = []

    def _take_journal(self) -> tuple[list, list]:
        """The rows and the waiting runs of the next commit (``_restore_journal`` on failure)."""
        rows, self._journal = self._journal, []
        settling, self._settling = self._settling, []
        return rows, settling

    def _restore_journal(self, rows: list) -> None:
        self._journal[:0] = rows  # kept for the next commit to try again

    @staticmethod
    def _settled(settling: list[asyncio.Future[None]], exc: BaseException | None = None) -> None:
        for fut in settling:
            if fut.done():  # its run may have been cancelled meanwhile
                continue
            if exc is not None:
                fut.set_exception(exc)
            else:
                fut.set_result(None)

    def _journal_threads(self) -> list[str]:
        return [row[0] for _, row in self._journal]  # a journal row starts with its thread

    def journal_invocation(
        self, thread_id: str, parent: str, payload: Any, configurable: dict[str, Any]
    ) -> None:
        """Record an invocation of ``thread_id`` from its checkpoint ``parent`` ("" for none):
        ``payload`` the graph input (a start: the run input; a resume: the answers; else a
        continue) and the ``configurable`` JSON values it ran with. Committed with the first
        node's result; a second invocation from the same checkpoint (a continuation) keeps the
        first record."""
        kind, recorded = "continue", None
        if isinstance(payload, dict):
            kind, recorded = "start", payload["input"]
        elif isinstance(payload, Command):
            kind, recorded = "resume", payload.resume
        conf = json.dumps({k: v for k, v in configurable.items() if k in JOURNAL_CONFIG})
        row = (thread_id, parent, kind, *self.serde.dumps_typed(recorded), conf)
        self._journal.append((INSERT_INVOCATION, row))

    def journal_node(self, thread_id: str, step: int, task: str, value: Any) -> None:
        """Record a node's result at ``step`` (``task``: the node's path in the graph). It is
        committed within ``HOLD_S``, with the thread's checkpoint, or when the run's next node
        starts (``asettle``), whichever comes first: the rows of the runs that finished a node
        meanwhile share that commit."""
        row = (thread_id, step, task, *self.serde.dumps_typed(value))
        self._journal.append((INSERT_NODE, row))
        self._arm_hold()

    async def asettle(self, thread_id: str) -> None:
        """Return once every journal row of ``thread_id`` is committed (a node of the run is
        about to start: no node runs before the results it follows are on file)."""
        if not any(row[0] == thread_id for _, row in self._journal):
            return
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        self._settling.append(done)
        self._commit_soon(loop)
        await done

    def unfinished_invocation(self, thread_id: str, parent: str) -> Invocation | None:
        """The invocation of ``thread_id`` that started from checkpoint ``parent`` ("" for a
        thread with none) and never wrote its own: a run killed before it ended or paused."""
        self._write_held_for({"configurable": {"thread_id": thread_id}})
        row = self.conn.execute(
            "SELECT kind, type, payload, configurable FROM sopgraph_invocations "
            "WHERE thread_id = ? AND parent = ?",
            (thread_id, parent),
        ).fetchone()
        if row is None:
            return None
        kind, type_, payload, conf = row
        return Invocation(kind, self.serde.loads_typed((type_, payload)), json.loads(conf))

    def journaled_nodes(self, thread_id: str) -> dict[tuple[int, str], Any]:
        """(step, task) -> the result ``journal_node`` recorded, for every node of the thread."""
        self._write_held_for({"configurable": {"thread_id": thread_id}})
        rows = self.conn.execute(
            "SELECT step, task, type, value FROM sopgraph_nodes WHERE thread_id = ?", (thread_id,)
        )
        return {(step, task): self.serde.loads_typed((t, v)) for step, task, t, v in rows}


class DurableNode:
    """A node function run under a saver that tracks its nodes.

    Counted in ``saver.in_flight`` while it runs (the saver commits a finished sibling's writes
    at once, so a kill meanwhile repeats neither). With the journal on: on a continuation its
    journaled result is given back instead of running it; otherwise it starts once the results
    it follows are on file, and its result is journaled before the run's next node starts. A
    result that writes nothing and goes nowhere is not journaled: running it again is free.
    """

    __slots__ = ("node", "saver", "journal")

    def __init__(self, node: NodeFunction, saver: Any, journal: bool):
        self.node = node
        self.saver = saver
        self.journal = journal

    async def __call__(self, state: Any, config: RunnableConfig) -> Command:
        conf = config.get("configurable") or {}
        run_id = str(conf.get("thread_id", ""))
        saver = self.saver
        if self.journal:
            key = journal_key(config)
            replay = conf.get(REPLAY)
            if replay is not None and key in replay:  # a continued run: this node had finished
                return Command(**replay[key])
            await saver.asettle(run_id)  # the results this node follows are on file
        in_flight = saver.in_flight
        in_flight[run_id] += 1
        try:
            command = await self.node(state, config)
        finally:
            in_flight[run_id] -= 1
            if not in_flight[run_id]:
                del in_flight[run_id]
        if self.journal and (command.update is not None or command.goto):
            saver.journal_node(run_id, *key, {"update": command.update, "goto": command.goto})
        return command


def durable(node: NodeFunction, checkpointer: Any) -> NodeFunction:
    """``node`` as the compiler adds it under ``checkpointer``: wrapped in ``DurableNode`` when
    the store tracks its nodes, else unchanged (nothing added to a run's path)."""
    if getattr(checkpointer, "in_flight", None) is None:
        return node
    return DurableNode(node, checkpointer, bool(getattr(checkpointer, "journaling", False)))
