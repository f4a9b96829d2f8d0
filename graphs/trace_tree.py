"""The console trace exporter: each trace printed as an indented tree when its root span ends.

invoke_workflow fc_alarm_triage status=done 12.3 ms
  execute_tool obs_station_idle v1 verdict=true observed=31.2 threshold=25 4.1 ms
    tools/call execute_range_query 2.9 ms
"""

from __future__ import annotations

import sys
import threading
from collections import defaultdict
from collections.abc import Sequence
from typing import TextIO

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import StatusCode

from sopgraph.graphs.untrusted_text import printable


class TreeExporter(SpanExporter):
    """Buffers the spans of each trace and prints the trace as an indented tree when its root ends.

    Printed on stderr by default so that ``--json`` output on stdout stays parseable.
    """

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream
        self._spans: dict[int, list[ReadableSpan]] = defaultdict(list)
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        for span in spans:
            tid = span.context.trace_id
            with self._lock:
                self._spans[tid].append(span)
                done = span.parent is None or span.parent.is_remote
                trace_spans = self._spans.pop(tid) if done else None
            if trace_spans:
                out = self.stream or sys.stderr
                out.write(format_tree(trace_spans) + "\n")
                out.flush()
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        with self._lock:
            leftovers = [s for spans in self._spans.values() for s in spans]
            self._spans.clear()
        if leftovers:  # a trace whose root never ended (the process is stopping mid-run)
            (self.stream or sys.stderr).write(format_tree(leftovers) + "\n")


def _label(span: ReadableSpan) -> str:
    a = span.attributes or {}
    parts = [span.name]
    if "sopgraph.tool.version" in a:
        parts.append(f"v{a['sopgraph.tool.version']}")
    for key, short in (
        ("sopgraph.run.status", "status"),
        ("sopgraph.verdict", "verdict"),
        ("sopgraph.observed", "observed"),
        ("sopgraph.threshold", "threshold"),
        ("sopgraph.action.status", "action"),
        ("gen_ai.usage.input_tokens", "in"),
        ("gen_ai.usage.output_tokens", "out"),
    ):
        if key in a:
            value = str(a[key])
            parts.append(f"{short}={value[:60] + '…' if len(value) > 60 else value}")
    if span.status.status_code is StatusCode.ERROR:
        why = span.status.description or ""
        parts.append(f"ERROR {why[:80] + '…' if len(why) > 80 else why}".rstrip())
    ms = ((span.end_time or span.start_time or 0) - (span.start_time or 0)) / 1e6
    parts.append(f"{ms:.1f} ms")
    return printable(" ".join(parts))  # observed values and errors come from MCP servers


def format_tree(spans: Sequence[ReadableSpan]) -> str:
    """Render spans as ``name attrs duration`` lines, children indented under their parent."""
    ids = {s.context.span_id for s in spans}
    children: dict[int | None, list[ReadableSpan]] = defaultdict(list)
    for s in spans:
        parent = s.parent.span_id if s.parent is not None and s.parent.span_id in ids else None
        children[parent].append(s)
    lines: list[str] = []

    def walk(parent: int | None, depth: int) -> None:
        for s in sorted(children.get(parent, []), key=lambda s: s.start_time or 0):
            lines.append("  " * depth + _label(s))
            walk(s.context.span_id, depth + 1)

    walk(None, 0)
    return "\n".join(lines)
