"""The spans of an SOP run: ``invoke_workflow <sop id>`` per invocation, one per SOP node.

A node's span is renamed ``execute_tool <tool>`` when a compiled tool decided it; an action's
records its approval and status. Each invocation keeps the traceparent of its root, so a later
one (a resume, maybe in another process) continues the trace (``graphs/telemetry.py`` says how).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode

from sopgraph.graphs.telemetry import NO_SPAN, as_current_span, enabled, set_attributes


def workflow_span(sop_id: str, thread_id: str, invocation: str, previous: str | None = None) -> Any:
    """The root of one run invocation (``invocation``: start, continue, resume).

    ``previous`` is the W3C traceparent of the invocation before it on the same thread: the
    new root continues that trace as its child (and links to it).
    """
    links: list[Link] = []
    parent: Context | None = None
    if previous and enabled():
        ctx = propagate.extract({"traceparent": previous})
        before = trace.get_current_span(ctx).get_span_context()
        if before.is_valid:
            links.append(Link(before, {"sopgraph.link": "previous_invocation"}))
            parent = ctx
    return as_current_span(
        f"invoke_workflow {sop_id}",
        SpanKind.INTERNAL,
        {
            "gen_ai.operation.name": "invoke_workflow",
            "gen_ai.workflow.name": sop_id,
            "gen_ai.conversation.id": thread_id,
            "sopgraph.invocation": invocation,
            "openinference.span.kind": "CHAIN",
            "session.id": thread_id,  # OpenInference's name for the conversation
        },
        links,
        parent,
    )


def record_run(span: Span, status: str, inp: dict[str, Any], path: Sequence[str]) -> None:
    """What the invocation ended with: the run status and input, and the nodes executed so far
    (also as OpenInference ``input.value``/``output.value``)."""
    if not span.is_recording():
        return
    set_attributes(
        span,
        {
            "sopgraph.run.status": status,
            "sopgraph.input.type": inp.get("type"),
            "sopgraph.site": inp.get("site"),
            "sopgraph.path.length": len(path),
            "input.value": json.dumps(inp, default=str),
            "input.mime_type": "application/json",
            "output.value": json.dumps({"status": status, "path": list(path)}),
            "output.mime_type": "application/json",
        },
    )


def current_traceparent() -> str | None:
    """The W3C traceparent of the current span (stored so that a later resume can link to it)."""
    if not enabled():
        return None
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier.get("traceparent")


def node_span(node_id: str, kind: str) -> Any:
    """The span of one SOP node, renamed ``execute_tool <tool>`` when a compiled tool decides it."""
    if not enabled():
        return NO_SPAN
    prefix = "sopgraph.action" if kind == "action" else "sopgraph.node"
    return as_current_span(
        f"{prefix} {node_id}",
        SpanKind.INTERNAL,
        {
            "sopgraph.node.id": node_id,
            "sopgraph.node.kind": kind,
            "openinference.span.kind": "CHAIN",
        },
    )


def record_outcome(span: Span, tool_name: str, outcome: Any) -> None:
    """A decision node's outcome (``graphs.executors.Outcome``): executor, version, verdict."""
    if not span.is_recording():
        return
    if outcome.executor == "tool":
        span.update_name(f"execute_tool {tool_name}")
        set_attributes(
            span,
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool_name,
                "gen_ai.tool.type": "function",
                "openinference.span.kind": "TOOL",
                "tool.name": tool_name,
            },
        )
    set_attributes(
        span, {"sopgraph.executor": outcome.executor, "sopgraph.tool.version": outcome.tool_version}
    )
    verdict = outcome.verdict
    if verdict is None:
        span.set_status(Status(StatusCode.ERROR, (outcome.error or "unresolved")[:500]))
        set_attributes(span, {"error.type": "unresolved", "sopgraph.verdict": "unresolved"})
        return
    set_attributes(
        span,
        {
            "sopgraph.verdict": verdict.value,
            "sopgraph.observed": verdict.observed,
            "sopgraph.threshold": verdict.threshold,
        },
    )


def record_action(span: Span, tool_name: str, record: dict[str, Any], outcome: Any) -> None:
    """An action node's record: approval, status, and the API call when it made one."""
    if not span.is_recording():
        return
    if outcome is not None:
        record_outcome(span, tool_name, outcome)
    set_attributes(
        span,
        {
            "sopgraph.action.status": record.get("status"),
            "sopgraph.action.approved": record.get("approved"),
            "sopgraph.action.by": record.get("by"),
            "sopgraph.action.cost": record.get("cost"),
        },
    )
