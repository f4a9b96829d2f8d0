"""Compile an SOP into a LangGraph ``StateGraph``: one graph node per SOP node, routed by verdict.

Children that fire together are sent with one ``Command(goto=[...])`` and so run in the same
superstep, concurrently. Loops are bounded by ``max_visits``; a node outside any loop that a
second parent reaches later is not decided again. Gated actions pause with ``interrupt``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from sopgraph.graphs.approval import DecisionError, decide_approval
from sopgraph.graphs.executors import ExecutorChain, NodeServices, Unavailable
from sopgraph.graphs.idempotency import acting, action_key
from sopgraph.graphs.input_schema import (
    InputError,
    entry_nodes,
    graph_input_typeddict,
    validate_run_input,
)
from sopgraph.graphs.model import Node, Sop, Verdict
from sopgraph.graphs.routing import fired_children, unmatched_reason
from sopgraph.graphs.run_spans import node_span, record_action, record_outcome
from sopgraph.graphs.state import RunState
from sopgraph.graphs.topology import nodes_in_cycles, parents_of, reachable
from sopgraph.graphs.untrusted_text import serialisable

APPROVAL_POLICIES = ("ask", "approve", "reject")

# What LangGraph calls for one SOP node, and what may wrap it (``compile_sop(wrap_node=...)``).
NodeFunction = Callable[[Any, RunnableConfig], Awaitable[Command]]


def _takes_nodes(router: Any) -> bool:
    try:
        return "nodes" in inspect.signature(router.choose).parameters
    except (TypeError, ValueError):
        return False


def _step(node: Node, **fields: Any) -> dict[str, Any]:
    return {"node": node.id, "kind": node.kind, **fields}


def _verdict_fields(v: Verdict) -> dict[str, Any]:
    return {"verdict": v.value, "observed": v.observed, "threshold": v.threshold}


class _NodeRunner:
    """The LangGraph node function for one SOP node: it decides the node, nothing else (what
    a store needs to make the run outlast a kill wraps it: ``compile_sop(wrap_node=...)``)."""

    def __init__(self, node: Node, services: NodeServices, parents: list[str], in_cycle: bool):
        self.node = node
        self.services = services
        self.parents = parents
        self.in_cycle = in_cycle
        # an action performs its own tool, if it has one; no sub-agent improvises an action
        self.action_tool = services.action_executor() if node.is_action else None

    async def __call__(self, state: RunState, config: RunnableConfig) -> Command:
        node = self.node
        visits = (state.get("visits") or {}).get(node.id, 0)
        if node.max_visits is not None and visits >= node.max_visits:
            reason = f"visit bound {node.max_visits} reached: the loop never took its exit"
            step = _step(node, status="bound", error=reason)
            return Command(update={"trail": [step], "bounded": {node.id: reason}}, goto=[])
        if visits and not self.in_cycle:
            return Command(goto=[])  # already decided when another parent reached it
        run_id = str((config.get("configurable") or {}).get("thread_id", ""))
        ctx = self.services.context(node, state, run_id, self.parents)
        with node_span(node.id, node.kind) as span:
            if node.is_action:
                return await self._action(ctx, config, span, visits + 1)
            return await self._decide(ctx, span)

    async def _decide(self, ctx, span) -> Command:
        node = self.node
        outcome = await self.services.chain.decide(node, ctx)
        record_outcome(span, node.tool_name, outcome)
        common = {
            "executor": outcome.executor,
            "tool_version": outcome.tool_version,
            "ms": round(outcome.ms, 3),
            "attempts": outcome.attempts,
        }
        if outcome.detail:  # a sub-agent's trace: turns, tokens, code, MCP calls
            common["detail"] = outcome.detail
        if outcome.refused:  # access refused: a distinct end, no branch fires
            step = _step(node, status="refused", error=outcome.error, fired=[], **common)
            update = {"trail": [step], "visits": {node.id: 1}, "refused": {node.id: outcome.error}}
            return Command(update=update, goto=[])
        if outcome.verdict is None:
            step = _step(
                node, status="unresolved", error=outcome.error, fired=node.next.on_error, **common
            )
            return Command(
                update={
                    "trail": [step],
                    "visits": {node.id: 1},
                    "unresolved": {node.id: outcome.error or "no executor"},
                },
                goto=list(node.next.on_error),
            )
        verdict = outcome.verdict
        children, open_conditions = fired_children(node, verdict)
        update: dict[str, Any] = {
            "visits": {node.id: 1},
            "verdicts": {node.id: verdict.model_dump()},
        }
        if open_conditions:
            chosen, reason, route = await self._route(verdict, open_conditions, ctx)
            children = list(dict.fromkeys(children + chosen))
            if reason:
                update["unresolved"] = {node.id: reason}
            if route:  # what the router offered, called and spent
                common["route"] = route
        status = "decided"
        if not children and node.next.when and "unresolved" not in update:
            # the verdict's value is one the SOP's conditions did not foresee
            status, common["error"] = "unmatched", unmatched_reason(verdict)
            update["unmatched"] = {node.id: common["error"]}
        step = _step(
            node,
            status=status,
            fired=children,
            explanation=verdict.explanation,
            **_verdict_fields(verdict),
            **common,
        )
        update["trail"] = [step]
        return Command(update=update, goto=children)

    async def _route(self, verdict, conditions, ctx) -> tuple[list[str], str | None, Any]:
        """``(children, unresolved reason, router detail)`` for the open NL conditions."""
        router = self.services.router
        if router is None:
            return (
                [],
                "natural-language condition needs an LLM router: configure a model (SOPGRAPH_MODEL)",
                None,
            )
        # routers that read the branches' child nodes (their APIs) take them as ``nodes``
        extra = {"nodes": self.services.sop.nodes} if _takes_nodes(router) else {}
        try:
            result = await router.choose(self.node, verdict, conditions, ctx, **extra)
        except Unavailable as exc:
            detail = getattr(exc, "detail", None)  # a router that tried and failed says so
            return [], f"router {'failed' if detail else 'unavailable'}: {exc}", detail
        # a list of children, or a RouteDecision with ``children`` and ``detail``
        return list(getattr(result, "children", result)), None, getattr(result, "detail", None)

    async def _action(self, ctx, config: RunnableConfig, span, visit: int) -> Command:
        node = self.node
        conf = config.get("configurable") or {}
        policy = conf.get("approval", "ask")
        key = action_key(str(conf.get("thread_id", "")), node.id, visit)
        approved, how, who, refused_answers = True, "not gated", None, []
        if node.approval == "required":
            if policy == "ask":
                answer, refused_answers = self._ask(ctx, key)
                approved, how = decide_approval(answer), "human"
                who = answer.get("by")
            else:
                approved, how = policy == "approve", f"policy:{policy}"
                who = conf.get("approver")
            # the LangGraph server's authenticated user over any name a client's answer or run
            # configuration gives; else who answered, or who set the policy
            who = conf.get("langgraph_auth_user_id") or who or "unknown (no approver given)"
        record: dict[str, Any] = {
            "node": node.id,
            "cost": node.cost,
            "approved": approved,
            "by": how,
            "text": ctx.text,
        }
        if who:
            record["approver"] = who
        if refused_answers:
            record["refused_answers"] = refused_answers
        fired_on_error: list[str] = []
        outcome = None
        if approved and self.services.has_tool(node.tool_name):
            record["idempotency_key"] = ctx.idempotency_key = key
            with acting(key):  # the action may write; every MCP call of it carries the key
                outcome = await ExecutorChain([self.action_tool]).decide(node, ctx)
            record["result"] = outcome.verdict.observed if outcome.verdict else None
            if outcome.refused:
                record["refused"] = outcome.error
            elif outcome.verdict is None:
                record["error"] = outcome.error
                fired_on_error = list(node.next.on_error)
        verdict = Verdict(value="true" if approved else "false", explanation=how)
        children = fired_on_error or fired_children(node, verdict)[0]
        status = (
            "executed"
            if approved and "error" not in record
            else ("failed" if approved else "rejected")
        )
        if "refused" in record:
            status, children = "refused", []
        record["status"] = status
        record_action(span, node.tool_name, record, outcome)
        step = _step(node, status=status, fired=children, verdict=verdict.value, approval=how)
        update: dict[str, Any] = {
            "visits": {node.id: 1},
            "verdicts": {node.id: verdict.model_dump()},
            "actions": [record],
            "trail": [step],
        }
        if "error" in record:
            update["unresolved"] = {node.id: record["error"]}
        if "refused" in record:
            update["refused"] = {node.id: record["refused"]}
        return Command(update=update, goto=children)

    def _ask(self, ctx, key: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Pause for the answer to this gated execution (``key``): an answer that does not name
        it (a duplicate or stale answer meant for another gate, or one naming none) is refused
        and the question asked again; ``(the answer, the refused answers)``."""
        refused: list[dict[str, Any]] = []
        while True:
            question = {
                "node": self.node.id,
                "action": ctx.text or self.node.id,
                "cost": self.node.cost,
                "ask": "approve or reject",
                "key": key,
                "answer": {"decision": "approve|reject", "key": key},
            }
            if refused:
                question["refused"] = refused
            answer = interrupt(question)
            if isinstance(answer, dict) and answer.get("key") == key:
                try:
                    decide_approval(answer)
                    return answer, refused
                except DecisionError as exc:
                    why = str(exc)
            else:
                why = f"the answer names no key, or another gate's: this gate's key is {key!r}"
            refused.append({"answer": serialisable(answer), "why": why})


def compile_sop(
    sop: Sop,
    services: NodeServices,
    checkpointer: Any = None,
    name: str | None = None,
    entries: list[str] | None = None,
    wrap_node: Callable[[NodeFunction], NodeFunction] | None = None,
):
    """Build and compile the LangGraph for ``sop``; with ``entries``, only the nodes those entry
    nodes reach (a run that starts there never leaves them).

    LangGraph's work per run and per superstep grows with the graph's channels (one per node):
    the fresh read of the entry route copies every channel, and each superstep visits them. A run
    started on an entry's graph keeps the same node ids, state and checkpoints as on the whole
    SOP's graph, which can read and continue it (resume, Studio, the LangGraph server).
    ``wrap_node`` wraps each node function: the runtime passes what its checkpointer needs to
    make a run outlast a kill (``runtime/journal.py``); the node itself only decides.

    Example:
        >>> graph = compile_sop(load_sop("examples/service_interruption"), services)
        >>> await graph.ainvoke({"input": {"case_id": "c1"}}, {"configurable": {"thread_id": "t1"}})
    """
    # the input schema is what LangGraph Studio and its clients show and send
    builder = StateGraph(RunState, input_schema=graph_input_typeddict(sop))
    parents = parents_of(sop)
    cyclic = nodes_in_cycles(sop)
    keep = set(reachable(sop, entries)) if entries is not None else set(sop.nodes)
    for nid, node in sop.nodes.items():
        if nid not in keep:
            continue
        dests = tuple(node.next.children()) or (END,)
        run: NodeFunction = _NodeRunner(node, services, parents[nid], nid in cyclic)
        if wrap_node is not None:
            run = wrap_node(run)
        builder.add_node(nid, run, destinations=dests)

    if entries is None:
        entries = list(dict.fromkeys(n for ids in sop.entry.values() for n in ids))

    # async: LangGraph runs a sync router in its thread pool, one thread hop per run
    async def route_entry(state: RunState) -> list[str]:
        inp = state.get("input")
        if inp is None:  # e.g. an alarm sent flat: its fields are not the graph's input
            raise InputError(
                'no run input: send it under "input", e.g. {"input": {"type": ...}}; fields '
                "sent beside it are ignored"
            )
        return entry_nodes(sop, validate_run_input(sop, inp))

    builder.add_conditional_edges(START, route_entry, entries)
    return builder.compile(checkpointer=checkpointer, name=name or sop.id)
