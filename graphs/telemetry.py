"""OpenTelemetry traces of SOP traversals, named after the GenAI and MCP semantic conventions.

One trace per run invocation: ``invoke_workflow <sop id>`` at the root, one span per SOP node
(``execute_tool <tool>`` when a compiled tool decided it, else ``sopgraph.node <id>``, or
``sopgraph.action <id>`` for an action that calls no tool), ``invoke_agent``/``chat`` spans
for sub-agents and model calls under their node, and ``tools/call <tool>`` for MCP calls.
A traversal paused by an interrupt (or killed) and resumed later, maybe by another process, is
several invocations in one trace: each later root is a child of the root before it (found
through the traceparent kept in the checkpoint) and links to it; all share
``gen_ai.conversation.id`` (the thread id). Spans also carry OpenInference's span kind, and the
roots its ``input.value``/``output.value``, which trace UIs such as Arize Phoenix show.

This module turns tracing on and off and opens the spans executors and MCP clients need; the
run's own spans (workflow and node) are in ``graphs/run_spans.py``.

Tracing is off until ``setup_tracing`` runs; until then every helper returns one shared
context that yields a non-recording span and touches nothing, so an untraced run pays a
function call per span (no generator, no attributes).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, TextIO

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode

from sopgraph.graphs.idempotency import ACTION_KEY, META_KEY
from sopgraph.graphs.trace_tree import TreeExporter

TRACE_MODES: tuple[str, ...] = ("console", "otlp")
_MAX_ATTR = 2000  # observed values can be whole query results; keep spans small

_NOOP_TRACER = trace.NoOpTracer()
NO_SPAN: AbstractContextManager[Span] = nullcontext(trace.INVALID_SPAN)  # reusable, reentrant
_provider: TracerProvider | None = None
_tracer: trace.Tracer | None = None


class TelemetryError(ValueError):
    """A tracing setting that cannot work; ``str`` is one line saying how to fix it."""


class _ActiveTracer(trace.Tracer):
    """The tracer of the provider ``setup_tracing`` installed; a no-op tracer before that.

    sopgraph does not take over the global provider, so tests (and an embedding application)
    can install and shut down several providers in one process.
    """

    def start_span(self, *args: Any, **kwargs: Any) -> Span:
        return (_tracer or _NOOP_TRACER).start_span(*args, **kwargs)

    def start_as_current_span(self, *args: Any, **kwargs: Any):  # type: ignore[override]
        return (_tracer or _NOOP_TRACER).start_as_current_span(*args, **kwargs)


tracer: trace.Tracer = _ActiveTracer()


def enabled() -> bool:
    return _tracer is not None


# --- setup ---------------------------------------------------------------------------------


def setup_tracing(
    mode: str | None = None,
    *,
    exporter: SpanExporter | None = None,
    stream: TextIO | None = None,
) -> TracerProvider | None:
    """Turn tracing on: ``console`` prints a tree per trace, ``otlp`` exports over OTLP/HTTP.

    ``mode=None`` falls back to ``OTEL_TRACES_EXPORTER``; unset means off (not the SDK's
    ``otlp`` default: a plain run should not post to a collector nobody started). The OTLP
    exporter reads ``OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT``/``HEADERS``/``TIMEOUT`` itself;
    ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES`` name the service (default
    ``sopgraph``). ``stream`` is where the console tree goes (stderr by default, so ``--json``
    stays parseable). ``exporter`` adds any exporter (tests pass an in-memory one).

    Example:
        >>> setup_tracing("console")
        >>> ...  # runs
        >>> shutdown_tracing()
    """
    global _provider, _tracer
    if mode is None and os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return None
    if mode is None:
        mode = os.environ.get("OTEL_TRACES_EXPORTER", "").split(",")[0].strip() or None
        mode = None if mode == "none" else mode
    if mode is not None and mode not in TRACE_MODES:
        raise TelemetryError(
            f"unknown trace exporter {mode!r}; use one of: {', '.join(TRACE_MODES)}"
        )
    if mode is None and exporter is None:
        return None
    shutdown_tracing()
    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: "sopgraph"}))
    provider = TracerProvider(resource=resource)
    if mode == "otlp":  # one warning line, not minutes of retries, when no collector listens
        from sopgraph.graphs.otlp_export import CollectorExporter

        provider.add_span_processor(BatchSpanProcessor(CollectorExporter()))
    elif mode == "console":
        provider.add_span_processor(SimpleSpanProcessor(TreeExporter(stream)))
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    _provider, _tracer = provider, provider.get_tracer("sopgraph")
    return provider


def shutdown_tracing() -> None:
    """Flush and stop the provider ``setup_tracing`` installed (pending OTLP batches are sent)."""
    global _provider, _tracer
    provider, _provider, _tracer = _provider, None, None
    if provider is not None:
        provider.shutdown()


# --- attribute values ----------------------------------------------------------------------


def attr_value(value: Any) -> str | bool | int | float | None:
    """A span attribute for any JSON value: scalars as they are, the rest as a JSON string."""
    if value is None or isinstance(value, bool | int | float):
        return value
    text = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= _MAX_ATTR else text[:_MAX_ATTR] + "…"


def set_attributes(span: Span, attrs: dict[str, Any]) -> None:
    for key, value in attrs.items():
        value = attr_value(value)
        if value is not None:
            span.set_attribute(key, value)


def _error(span: Span, exc: BaseException) -> None:
    span.record_exception(exc)
    if "error.type" not in (getattr(span, "attributes", None) or {}):
        span.set_attribute("error.type", type(exc).__qualname__)
    span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"[:500]))


def as_current_span(
    name: str,
    kind: SpanKind,
    attrs: dict[str, Any],
    links: Sequence[Link] = (),
    parent: Context | None = None,
) -> AbstractContextManager[Span]:
    """Start ``name`` as the current span; an exception marks it as an error and propagates.

    LangGraph's interrupts are exceptions (``GraphBubbleUp``) that are not failures: the span
    ends with ``sopgraph.interrupted`` instead of an error status.
    """
    if _tracer is None:
        return NO_SPAN
    return _live_span(_tracer, name, kind, attrs, links, parent)


@contextmanager
def _live_span(
    tracer_: trace.Tracer,
    name: str,
    kind: SpanKind,
    attrs: dict[str, Any],
    links: Sequence[Link],
    parent: Context | None,
):
    with tracer_.start_as_current_span(
        name,
        context=parent,
        kind=kind,
        links=links,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        set_attributes(span, attrs)
        try:
            yield span
        except BaseException as exc:
            from langgraph.errors import GraphBubbleUp

            if isinstance(exc, GraphBubbleUp):
                span.set_attribute("sopgraph.interrupted", True)
            else:
                _error(span, exc)
            raise


# --- one helper per span kind --------------------------------------------------------------


def mcp_span(server: str, tool: str, transport: str = "pipe") -> Any:
    """A client-side MCP ``tools/call`` (``transport``: ``pipe`` for stdio, ``tcp`` for HTTP)."""
    if _tracer is None:
        return NO_SPAN
    return as_current_span(
        f"tools/call {tool}",
        SpanKind.CLIENT,
        {
            "mcp.method.name": "tools/call",
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "network.transport": transport,
            "sopgraph.mcp.server": server,
            "openinference.span.kind": "TOOL",
        },
    )


def mcp_meta() -> dict[str, Any] | None:
    """What a request's ``params._meta`` carries: the trace context (``traceparent``) when
    tracing is on, and the running gated action's idempotency key; None when neither."""
    carrier: dict[str, Any] = {}
    if _tracer is not None:
        propagate.inject(carrier)
    key = ACTION_KEY.get()
    if key is not None:
        carrier[META_KEY] = key
    return carrier or None


def agent_span(name: str, node_id: str | None = None, description: str | None = None) -> Any:
    """An ``invoke_agent <name>`` span around a sub-agent (e.g. the CodeAct executor)."""
    return as_current_span(
        f"invoke_agent {name}",
        SpanKind.INTERNAL,
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": name,
            "gen_ai.agent.description": description,
            "sopgraph.node.id": node_id,
            "openinference.span.kind": "AGENT",
        },
    )


def chat_span(model: str, provider: str | None = None) -> Any:
    """A ``chat <model>`` span around one model call; add usage with ``record_usage``."""
    return as_current_span(
        f"chat {model}",
        SpanKind.CLIENT,
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model,
            "gen_ai.provider.name": provider,
            "openinference.span.kind": "LLM",
        },
    )


def record_usage(
    span: Span,
    input_tokens: int | None,
    output_tokens: int | None,
    model: str | None = None,
    provider: str | None = None,
) -> None:
    """Token usage of a chat call, or the totals of an agent run, on ``span``."""
    if not span.is_recording():
        return
    set_attributes(
        span,
        {
            "gen_ai.usage.input_tokens": input_tokens,
            "gen_ai.usage.output_tokens": output_tokens,
            "gen_ai.request.model": model,
            "gen_ai.provider.name": provider,
        },
    )
