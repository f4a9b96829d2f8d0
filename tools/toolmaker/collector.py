"""The data collector: the CodeAct sub-agent investigates a few training cases of a node.

It is the inference-time fallback, run against the real MCP servers on cases balanced across
verdict labels; each run leaves a ``Trace``: the code, the MCP exchanges, the schema observed
in the replies (field names, types, ranges, nulls) and the verdict, graded against the label
when there is one. These traces supply the execution details the SOP text omits.
"""

from __future__ import annotations

import random
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from sopgraph.graphs.executors import ToolContext
from sopgraph.graphs.model import Node, Sop
from sopgraph.tools.toolmaker.catalog import preview
from sopgraph.tools.toolmaker.record import Case, FieldSummary, McpExchange, Trace


def balanced_sample(cases: list[Case], n: int, seed: int) -> list[Case]:
    """``n`` cases, round-robin across labels (shuffled by ``seed``); unlabeled: a plain sample."""
    rng = random.Random(seed)
    by_label: dict[str | None, list[Case]] = defaultdict(list)
    for c in cases:
        by_label[c.expected].append(c)
    for group in by_label.values():
        rng.shuffle(group)
    labels = sorted(by_label, key=str)
    rng.shuffle(labels)
    out: list[Case] = []
    while len(out) < n and any(by_label.values()):
        for label in labels:
            if by_label[label] and len(out) < n:
                out.append(by_label[label].pop())
    return out


def observe_schema(exchanges: list[dict[str, Any]]) -> list[FieldSummary]:
    """Fields seen in MCP replies: SQL-style ``columns``/``rows`` and Prometheus-style series."""
    fields: dict[tuple[str, str], FieldSummary] = {}

    def see(source: str, name: str, value: Any, dtype: str | None = None) -> None:
        f = fields.setdefault(
            (source, name),
            FieldSummary(source=source, name=name, dtype=dtype or type(value).__name__),
        )
        f.count += 1
        if value is None:
            f.nulls += 1
            return
        if f.dtype == "NoneType":
            f.dtype = dtype or type(value).__name__
        try:
            f.min = value if f.min is None or value < f.min else f.min
            f.max = value if f.max is None or value > f.max else f.max
        except TypeError:
            pass
        if len(f.examples) < 3 and value not in f.examples:
            f.examples.append(value)

    for ex in exchanges:
        result, source = ex.get("result"), f"{ex.get('server')}.{ex.get('tool')}"
        if not isinstance(result, dict):
            continue
        if isinstance(result.get("rows"), list) and isinstance(result.get("columns"), list):
            types = result.get("column_types") or [None] * len(result["columns"])
            for row in result["rows"]:
                for name, kind, value in zip(result["columns"], types, row, strict=False):
                    see(source, name, value, kind)
        data = result.get("data")
        if isinstance(data, dict) and isinstance(data.get("result"), list):
            for series in data["result"]:
                for label, value in (series.get("metric") or {}).items():
                    see(source, f"label {label}", value)
                points = [series["value"]] if "value" in series else series.get("values", [])
                for point in points:
                    try:
                        see(source, "value", float(point[1]), "float")
                    except (TypeError, ValueError, IndexError):
                        see(source, "value", None, "float")
    return list(fields.values())


async def collect(
    sop: Sop,
    node: Node,
    cases: list[Case],
    executor: Any,
    pool: Any,
    params_for: Callable[[dict[str, Any]], dict[str, Any]],
    on_case: Callable[[int, int], None] | None = None,
) -> list[Trace]:
    """Run ``executor`` (the CodeAct sub-agent) on each case; one Trace per case, in order.

    A run that ends without a verdict is kept (its code and replies are evidence too).
    """
    traces = []
    for i, case in enumerate(cases):
        if on_case:
            on_case(i, len(cases))
        params = params_for(case.run_input)
        ctx = ToolContext(
            node_id=node.id, text=sop.render_text(node, params), params=params, parents={},
            input=case.input, run_id=f"toolmaker:collect:{node.id}", mcp=pool, node=node,
        )  # fmt: skip
        start = time.perf_counter()
        try:
            outcome = await executor.decide(node, ctx)
            detail, verdict, error = outcome.detail, outcome.verdict, outcome.error
        except Exception as exc:  # noqa: BLE001 - a failed investigation is still a trace
            detail, verdict, error = getattr(exc, "detail", {}) or {}, None, f"{exc}"
        calls = detail.get("mcp_calls", [])
        value = verdict.value if verdict else None
        traces.append(
            Trace(
                case=case,
                verdict=value,
                correct=None if case.expected is None else value == case.expected,
                code=[step.get("code", "") for step in detail.get("code", [])],
                exchanges=[
                    McpExchange(
                        server=c.get("server"),
                        tool=c.get("tool"),
                        args=c.get("args") or {},
                        result=preview(c.get("result"), 1500),
                        error=c.get("error"),
                    )  # fmt: skip
                    for c in calls
                ],
                schema=observe_schema(calls),
                answer=detail.get("answer"),
                error=error,
                input_tokens=int(detail.get("input_tokens") or 0),
                output_tokens=int(detail.get("output_tokens") or 0),
                seconds=round(time.perf_counter() - start, 2),
            )
        )
    return traces
