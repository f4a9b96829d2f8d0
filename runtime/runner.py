"""Run compiled SOPs durably: a session per SOP keeps MCP servers, registry and checkpointer open.

A run that was killed resumes on the same thread id without re-running the nodes that had
completed. With SQLite checkpoints (the default) each node's result is journaled before the next
node starts and LangGraph checkpoints when the invocation ends or pauses; a continued run gives
the journaled results back instead of running those nodes (``runtime/journal.py``). Other
stores (Postgres) are checkpointed every superstep (``durability="sync"``)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from functools import partial
from pathlib import Path
from typing import Any

from sopgraph.graphs.compiler import APPROVAL_POLICIES, compile_sop
from sopgraph.graphs.home import home_dir
from sopgraph.graphs.input_schema import InputError, entry_nodes, validate_run_input
from sopgraph.graphs.loader import load_sop
from sopgraph.graphs.model import Sop
from sopgraph.graphs.run_spans import current_traceparent, record_run, workflow_span
from sopgraph.nodes.architectures import executors_for
from sopgraph.nodes.mcp import McpPool, load_server_configs
from sopgraph.nodes.tool_node import ToolExecutor
from sopgraph.runtime.answers import open_answer_book
from sopgraph.runtime.checkpointers import (
    checkpoint_id,
    durability_mode,
    hold_log_rows,
    open_checkpointer,
    track_nodes,
)
from sopgraph.runtime.journal import REPLAY, durable
from sopgraph.runtime.resume import answer_gate, take_over_resume, within_policy
from sopgraph.runtime.run_result import RunResult, build_result
from sopgraph.runtime.services import Services
from sopgraph.tools.invocation_log import InvocationLog
from sopgraph.tools.registry import Registry

# Called once per executed node with the node id and its state update (``on_step``).
StepCallback = Callable[[str, dict[str, Any]], Awaitable[None]]


def default_router(model: Any) -> Any:
    """SOP-agent's function-calling router when a chat model is configured, else none."""
    if model is None:
        return None
    from sopgraph.nodes.router import FunctionCallingRouter

    return FunctionCallingRouter(model)


def sop_dir_of(sop_path: str | Path) -> Path:
    p = Path(sop_path)
    return p if p.is_dir() else p.parent


def check_input(sop: Sop, inp: Any) -> dict[str, Any]:
    """``inp`` if it fits the SOP's entries and input contract, else one ``InputError``."""
    return validate_run_input(sop, inp)


def new_thread_id() -> str:
    """A fresh run's thread id: the time in milliseconds, then 80 random bits, in hex.

    The random bits keep it unique in a checkpoint store that many workers share (48 would
    collide about once in 17M runs); the time in front makes ids sort by creation, so the
    SQLite stores (checkpoints and writes keyed by thread first, the invocation log's run
    index) append near the end of their B-trees instead of writing pages all over the file.
    """
    return f"{time.time_ns() // 1_000_000:012x}{secrets.token_hex(10)}"


def default_checkpoint_path() -> Path:
    return home_dir() / "checkpoints.sqlite"


class Session:
    """An SOP opened for runs: MCP servers started once, graph compiled once.

    Example:
        >>> async with Session("examples/service_interruption") as s:
        ...     result = await s.run({"case_id": "c001"})
    """

    def __init__(
        self,
        sop_path: str | Path,
        *,
        checkpoint: str | Path | None = None,
        approval: str = "ask",
        log_path: Path | None = None,
        executors: list[Any] | None = None,
        router: Any = None,
        arch: str = "direct",
        model: Any = None,
        lm: Any = None,
        mcp: bool = True,
        mcp_pool: Any = None,
        journal: bool = True,
        durability: str | None = None,
    ):
        if approval not in APPROVAL_POLICIES:
            raise InputError(f"approval policy must be one of {', '.join(APPROVAL_POLICIES)}")
        self.sop_dir = sop_dir_of(sop_path)
        self.sop_path = str(Path(sop_path).resolve())
        self.sop = load_sop(sop_path)
        self.approval = approval
        self.checkpoint = checkpoint
        self.in_memory = str(checkpoint) == "memory"  # checkpoints die with the process
        self.use_journal = journal  # SQLite: journal nodes, checkpoint per invocation (above)
        self.durability = durability_mode(durability)  # instead of the store's default (_drive)
        self.journal: Any = None  # the SQLite saver, when it journals this session's runs
        self.log = InvocationLog(log_path or home_dir() / "invocations.sqlite")
        if mcp_pool is not None:  # e.g. evals.in_process_mcp for a lower-bound benchmark
            self.pool = mcp_pool
        else:
            self.pool = McpPool(load_server_configs(self.sop_dir)) if mcp else None
        if executors is not None:  # explicit executors run after the compiled tools

            def chain(registry: Registry, log: InvocationLog) -> list[Any]:
                return [ToolExecutor(registry, log), *executors]

        else:  # ``arch``: direct | subagent | codeact | check | check-only (nodes/architectures.py)

            def chain(registry: Registry, log: InvocationLog) -> list[Any]:
                check = None
                if (
                    arch in ("check", "check-only") and model is not None
                ):  # no model: executors_for says so
                    from sopgraph.tools.toolmaker.check_fallback import CheckFallback

                    check = CheckFallback(self.sop, registry, lm, str(getattr(lm, "model", "")))
                return executors_for(arch, model, registry, log, lm=lm, check=check)

        self.arch = arch
        self.services = Services.for_sop(
            self.sop,
            self.sop_dir,
            log=self.log,
            executors=chain,
            mcp=self.pool,
            router=router if router is not None else default_router(model),
        )
        self.registry = self.services.registry
        self._stack = AsyncExitStack()
        self.graph = None  # the whole SOP: reads, resumes and continued runs
        self._entry_graphs: dict[tuple[str, ...], Any] = {}  # new runs, by entry nodes

    async def __aenter__(self) -> Session:
        spec = self.checkpoint if self.checkpoint is not None else default_checkpoint_path()
        saver = await self._stack.enter_async_context(open_checkpointer(spec))
        self.answers = await self._stack.enter_async_context(open_answer_book(spec))
        if hold_log_rows(saver, self.log):  # the rows held are written when the session ends
            self._stack.callback(self.log.flush)
        self.journal = track_nodes(saver, self.use_journal)  # before compiling: see journal.py
        self.graph = compile_sop(
            self.sop,
            self.services,
            checkpointer=saver,
            wrap_node=partial(durable, checkpointer=saver),
        )
        if self.pool is not None and self.pool.servers:
            await self.pool.start()
            self._stack.push_async_callback(self.pool.close)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    def _config(
        self, thread_id: str, approval: str | None = None, approver: str | None = None
    ) -> dict[str, Any]:
        configurable = {"thread_id": thread_id, "approval": approval or self.approval}
        # kept in each checkpoint's metadata: `sopgraph runs list` tells the runs' SOPs apart
        configurable.update(sop_id=self.sop.id, sop_path=self.sop_path)
        if approver:  # who answers gated actions by policy, recorded with each action
            configurable["approver"] = approver
        return {"configurable": configurable, "recursion_limit": 10_000}

    async def _drive(
        self, payload: Any, config: dict[str, Any], on_step: StepCallback | None
    ) -> dict[str, Any] | None:
        """Run the supersteps; the final state (with ``__interrupt__``) when ainvoke gave it."""
        # Checkpoints in memory die with the process: writing one per superstep buys nothing;
        # a journaled run's nodes are on file as they finish.
        durability = self.durability or ("exit" if self.in_memory or self.journal else "sync")
        graph = self.graph
        if isinstance(payload, dict):  # a new run: on the graph of the nodes its entry reaches
            graph = self._entry_graph(entry_nodes(self.sop, payload["input"]))
        if on_step is None:
            final = await graph.ainvoke(payload, config, durability=durability)
            return final if isinstance(final, dict) else None
        # Streaming updates runs the same supersteps as ainvoke and yields each node's update.
        async for chunk in graph.astream(
            payload, config, stream_mode="updates", durability=durability
        ):
            for node, update in chunk.items():
                if node != "__interrupt__" and update:
                    await on_step(node, update)
        return None

    def _entry_graph(self, entries: list[str]) -> Any:
        """The graph of the nodes ``entries`` reach, compiled at its first run (see
        ``compile_sop``); the whole SOP's graph reads and continues its runs."""
        key = tuple(entries)
        graph = self._entry_graphs.get(key)
        if graph is None:
            saver = self.graph.checkpointer
            graph = compile_sop(
                self.sop,
                self.services,
                saver,
                entries=entries,
                wrap_node=partial(durable, checkpointer=saver),
            )
            self._entry_graphs[key] = graph
        return graph

    async def run(
        self,
        inp: dict[str, Any],
        thread_id: str | None = None,
        approval: str | None = None,
        on_step: StepCallback | None = None,
        approver: str | None = None,
    ) -> RunResult:
        """Start a run, or resume an unfinished one on ``thread_id`` (a finished one is returned).

        ``on_step(node_id, update)`` is awaited after each node that changed the run state;
        ``approver`` (who set ``approval``) is recorded with each gated action it decides.
        """
        fresh = thread_id is None  # a thread id made here has no checkpoint to look up
        thread_id = thread_id or new_thread_id()
        config = self._config(thread_id, approval, approver)
        policy = config["configurable"]["approval"]
        snapshot = None if fresh else await self.graph.aget_state(config)
        killed = None if fresh else self._killed_invocation(thread_id, snapshot)
        if killed is not None:
            if killed.kind != "resume":
                return await self._continue_journaled(
                    thread_id, killed, on_step, snapshot, policy, approver
                )
            # a stopped resume: continued once, by one process
            gates = await take_over_resume(self.answers, thread_id, killed, approver)
            try:
                result = await self._continue_journaled(
                    thread_id, killed, on_step, snapshot, policy, approver
                )
            except BaseException:
                for gate in gates:
                    await self.answers.stop(thread_id, gate)
                raise
            for gate in gates:
                await self.answers.finish(thread_id, gate)
            return result
        if snapshot is not None and snapshot.values:
            # "input": killed after its input was saved, before its first step (next reads ())
            unfinished = snapshot.next or (snapshot.metadata or {}).get("source") == "input"
            if unfinished and not snapshot.interrupts:
                return await self._invoke(None, config, on_step, "continue", snapshot)
            return await self.result(thread_id, stored=True)
        check_input(self.sop, inp)
        return await self._invoke({"input": inp}, config, on_step, "start")

    async def resume(
        self,
        thread_id: str,
        decision: Any,
        interrupt_id: str | None = None,
        on_step: StepCallback | None = None,
        approver: str | None = None,
        approval: str | None = None,
        node: str | None = None,
    ) -> RunResult:
        """Answer the pending gated action of ``thread_id`` named by ``interrupt_id`` (or the
        only one at ``node``) with approve or reject; ``approver`` (which client or user
        answers) is recorded with the action.

        The interrupt is claimed first (``runtime/answers.py``): of many answers at once one
        drives the run and each other raises ``DuplicateAnswer``; an answer for a gate the run
        no longer waits on raises ``StaleAnswer``. Every answer is in the run's answer log.
        ``approval`` (default the session's) is the policy of the process answering: under
        ``reject`` an approval is refused, so no gated action runs here by any answer.
        """
        return await answer_gate(
            self, thread_id, decision, interrupt_id, node, on_step, approver, approval
        )

    async def answers_of(self, thread_id: str) -> list[dict[str, Any]]:
        """Every answer given to ``thread_id``'s gated actions, with its outcome."""
        return await self.answers.history(thread_id)

    def _killed_invocation(self, thread_id: str, snapshot: Any) -> Any:
        """The journaled invocation of ``thread_id`` killed before its checkpoint, if any."""
        if self.journal is None:
            return None
        return self.journal.unfinished_invocation(thread_id, checkpoint_id(snapshot))

    async def _continue_journaled(
        self,
        thread_id: str,
        killed: Any,
        on_step: StepCallback | None,
        snapshot: Any,
        policy: str,
        approver: str | None,
    ) -> RunResult:
        """Run a killed invocation again as it was recorded; each node it had finished gives
        back its journaled result instead of running (``runtime.journal.REPLAY``).

        Within this process's ``policy``: a recorded policy that reaches further is cut down
        to it, recorded with ``approver`` (under ``reject`` a gated action that had not run is
        rejected, whatever answer the stopped resume carried; one that ran is only replayed).
        """
        conf = killed.configurable
        allowed = within_policy(conf.get("approval"), policy)
        who = conf.get("approver") if allowed == conf.get("approval") else approver
        config = self._config(thread_id, allowed, who)
        config["configurable"][REPLAY] = self.journal.journaled_nodes(thread_id)
        return await self._invoke(killed.graph_input(), config, on_step, "continue", snapshot)

    async def _invoke(
        self,
        payload: Any,
        config: dict[str, Any],
        on_step: StepCallback | None,
        invocation: str,
        snapshot: Any = None,
    ) -> RunResult:
        """One drive of the graph, traced as an ``invoke_workflow`` root span.

        A paused or killed traversal continues in a later invocation (maybe another process):
        each checkpoint keeps its invocation's traceparent so the next root links back to it.
        """
        thread_id = config["configurable"]["thread_id"]
        if self.journal is not None and REPLAY not in config["configurable"]:
            self.journal.journal_invocation(
                thread_id, checkpoint_id(snapshot), payload, config["configurable"]
            )
        previous = ((snapshot.metadata or {}) if snapshot else {}).get("traceparent")
        with workflow_span(self.sop.id, thread_id, invocation, previous) as span:
            traceparent = current_traceparent()
            if traceparent:
                config = {**config, "metadata": {"traceparent": traceparent}}
            try:
                final = await self._drive(payload, config, on_step)
            finally:
                if not self.in_memory:  # in memory the log's group commit writes them
                    self.log.flush()  # the rows this run's calls left held (see _hold_log_rows)
            result = await self.result(thread_id, resumed=invocation == "continue", final=final)
            record_run(span, result.status, result.input, result.path)
        return result

    async def result(
        self,
        thread_id: str,
        resumed: bool = False,
        stored: bool = False,
        final: dict[str, Any] | None = None,
    ) -> RunResult:
        """The run on ``thread_id``, read from its checkpoint, or from ``final``: the state the
        graph invocation returned (that saves reading back what was just written)."""
        if final is None:
            snapshot = await self.graph.aget_state(self._config(thread_id))
            values, pending = snapshot.values or {}, snapshot.interrupts
        else:
            values = dict(final)
            pending = values.pop("__interrupt__", ())
        return build_result(thread_id, self.sop.id, values, pending, resumed=resumed, stored=stored)


async def run_sop(
    sop_path: str | Path,
    inp: dict[str, Any],
    *,
    thread_id: str | None = None,
    approval: str = "ask",
    checkpoint: str | Path | None = None,
    **session_kw: Any,
) -> RunResult:
    """One run in its own session (use ``Session`` for batches: it starts MCP servers once)."""
    async with Session(sop_path, checkpoint=checkpoint, approval=approval, **session_kw) as s:
        return await s.run(inp, thread_id=thread_id)


async def resume_run(
    sop_path: str | Path,
    thread_id: str,
    decision: Any,
    *,
    checkpoint: str | Path | None = None,
    **session_kw: Any,
) -> RunResult:
    """Answer a paused run's gated action and continue it."""
    async with Session(sop_path, checkpoint=checkpoint, **session_kw) as s:
        return await s.resume(thread_id, decision)
