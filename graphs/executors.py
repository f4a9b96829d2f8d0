"""The contract between the compiled graph and whatever decides a node: the executor interface,
the chain that picks the cheapest executor, and what the graph asks of the services it is given.

A node is decided by the first executor of its chain that can serve it: a compiled tool,
then (when a model is configured) a CodeAct sub-agent. An executor that cannot serve raises
``Unavailable``; one that tried and failed raises anything else. Neither is a verdict. The
executors themselves live in ``nodes/``, the services that carry them in ``runtime/``; the
compiler (``graphs/compiler.py``) knows only this module.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from sopgraph.graphs.model import Node, Sop, Verdict
from sopgraph.graphs.untrusted_text import serialisable


@dataclass
class ToolContext:
    """What a tool or sub-agent sees of the run: the node, its parameters, parents and MCP.

    ``input`` is the run's input as the SOP's input contract validated it; a compiled tool
    gets it as its first argument too (``run(input, ctx)``, ``tools/contract.py``).
    """

    node_id: str
    text: str
    params: dict[str, Any]
    parents: dict[str, Verdict]
    input: dict[str, Any]
    run_id: str
    mcp: Any = None  # nodes.mcp.McpPool (or anything with `await call(server, tool, args)`)
    node: Node | None = None
    # a gated execution's key (``graphs/idempotency.py``): the same when the action runs again
    idempotency_key: str | None = None


@dataclass
class Outcome:
    """What an executor concluded, with enough detail for the trail and the trace."""

    verdict: Verdict | None
    executor: str
    tool_version: int | None = None
    error: str | None = None
    ms: float = 0.0
    detail: dict[str, Any] = field(default_factory=dict)
    attempts: list[dict[str, Any]] = field(default_factory=list)
    refused: bool = False  # verdict None because a data source refused access (``Refused``)


class Unavailable(Exception):
    """This executor cannot serve the node (no tool, no model); try the next one."""


# The first words of a data server's tool error that refuses the run's identity access
# (docs/access-control.md); the MCP pool raises a ``Refused`` for such an error.
REFUSAL_PREFIX = "access denied: "


class Refused(Exception):
    """A data source refused the run's identity access. The node ends ``refused``: no other
    executor is tried (a sub-agent could only guess what it was refused) and no branch fires."""


class Executor(Protocol):
    """Decides nodes. An executor may also define ``serves(node) -> bool``: the chain passes
    over nodes it does not serve without recording an attempt (e.g. the judge only takes
    free-text conditions)."""

    name: str

    async def decide(self, node: Node, ctx: ToolContext) -> Outcome: ...


class ExecutorChain:
    """Tries executors in order; the first verdict wins, every failure is kept as an attempt."""

    def __init__(self, executors: list[Executor]):
        self.executors = executors

    async def decide(self, node: Node, ctx: ToolContext) -> Outcome:
        attempts: list[dict[str, Any]] = []
        start = time.perf_counter()
        for ex in self.executors:
            serves = getattr(ex, "serves", None)
            if serves is not None and not serves(node):
                continue
            # what the executor wrote (its verdict, an exception's text) enters the run through
            # `serialisable`: a tool's own code may write lone surrogates, no checkpoint stores
            try:
                outcome = await ex.decide(node, ctx)
            except Unavailable as exc:
                reason = serialisable(str(exc))
                attempts.append({"executor": ex.name, "status": "unavailable", "reason": reason})
                continue
            except Refused as exc:  # final: the run's identity may not have this data
                reason = serialisable(str(exc))
                attempts.append({"executor": ex.name, "status": "refused", "reason": reason})
                ms = (time.perf_counter() - start) * 1000
                return Outcome(None, ex.name, error=reason, ms=ms, attempts=attempts, refused=True)
            except Exception as exc:  # noqa: BLE001 - a failing executor hands over to the next
                reason = serialisable(f"{type(exc).__name__}: {exc}")
                attempt = {"executor": ex.name, "status": "error", "reason": reason}
                if isinstance(getattr(exc, "detail", None), dict):
                    # e.g. a failed sub-agent's tokens and trace
                    attempt["detail"] = serialisable(exc.detail)
                attempts.append(attempt)
                continue
            outcome.attempts = attempts + outcome.attempts
            outcome.verdict = serialisable(outcome.verdict)  # whichever executor wrote it
            return outcome
        reasons = "; ".join(f"{a['executor']}: {a['reason']}" for a in attempts)
        return Outcome(
            verdict=None,
            executor="none",
            error=reasons or "no executor configured for this node",
            ms=(time.perf_counter() - start) * 1000,
            attempts=attempts,
        )


class Router(Protocol):
    """Decides natural-language conditions (an LLM router); raises Unavailable with no model."""

    async def choose(
        self,
        node: Node,
        verdict: Verdict,
        conditions: list[tuple[str, list[str]]],
        ctx: ToolContext,
    ) -> list[str]: ...


class NodeServices(Protocol):
    """What a compiled graph's nodes call at run time (``runtime/services.py`` is the one the
    runtime passes): the SOP, the executor chain, the router, and an action's own tool."""

    sop: Sop
    chain: ExecutorChain
    router: Router | None

    def context(
        self, node: Node, state: dict[str, Any], run_id: str, parents: list[str]
    ) -> ToolContext:
        """What the node's executor sees of the run: its text, parameters, parents, input."""
        ...

    def has_tool(self, name: str) -> bool:
        """Whether a tool is registered under ``name`` (an action without one only records)."""
        ...

    def action_executor(self) -> Executor:
        """The executor that performs an action node's own tool (no sub-agent improvises one)."""
        ...
