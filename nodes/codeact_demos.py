"""The CodeAct sub-agent's demonstrations: how the library's nearest other nodes read their data.

For a node the sub-agent decides, the ``k`` library nodes nearest to it (``tools/similar``:
never its own tool; one that reads the same metric, a sibling check on another window or
device, is fair: the library holds it when this node's tool is missing) run their spec on
this input, with every MCP call they make recorded. The sub-agent is shown each call as the Python it would write
(``metrics_execute_query(query=..., time=NOW)``), what came back and the verdict the spec
reached: real queries against this input's data, with the data's own result shapes, for other
checks. A demonstration that fails to run (it needs an input field this input lacks) is left
out, and the next nearest stands in.

Example:
    >>> demos = await LibraryDemos(registry).for_node(node, ctx, k=2)   # doctest: +SKIP
    >>> demos[0].calls[0].function                                       # doctest: +SKIP
    'metrics_execute_query'
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from sopgraph.graphs.executors import ToolContext
from sopgraph.graphs.loader import load_sop
from sopgraph.graphs.model import PARAM, Node
from sopgraph.nodes.mcp_functions import function_name
from sopgraph.prompts.codeact import DemoCall, DemoRun, table_rows
from sopgraph.tools.registry import Registry
from sopgraph.tools.similar import Entry, library_specs, nearest
from sopgraph.tools.spec import Check, trace
from sopgraph.tools.spec.bind import Bound
from sopgraph.tools.spec.rows import COUNTERS

DEFAULT_DEMOS = 2
MAX_TRIED = 6  # nearest specs tried for them (one needing a field this input lacks fails)
PAGING = ("page", "page_size")  # arguments the spec runtime sends that a demonstration omits


class _Recorder:
    """An MCP pool that records each call (and its result) before returning it."""

    def __init__(self, pool: Any):
        self.pool = pool
        self.servers = getattr(pool, "servers", {})
        self.calls: list[tuple[str, str, dict[str, Any], Any]] = []

    async def call(self, server: str, tool: str, args: dict[str, Any]) -> Any:
        result = await self.pool.call(server, tool, args)
        self.calls.append((server, tool, dict(args), result))
        return result

    async def list_tools(self, server: str) -> Any:
        return await self.pool.list_tools(server)


def with_params(text: str, params: dict[str, Any]) -> str:
    """The node's text with each ``{param}`` followed by its site value: ``{x} (= 5)``."""
    return PARAM.sub(
        lambda m: f"{m.group(0)} (= {params[m.group(1)]})" if m.group(1) in params else m.group(0),
        " ".join(text.split()),
    )


@dataclass
class LibraryDemos:
    """The demonstrations of one SOP's library; the library is read once per executor."""

    registry: Registry
    _pool: list[Entry] | None = field(default=None, repr=False)

    def pool(self) -> list[Entry]:
        if self._pool is None:
            sop = load_sop(self.registry.lib_dir.parent)
            self._pool = library_specs(sop, self.registry)
        return self._pool

    async def for_node(self, node: Node, ctx: ToolContext, k: int = DEFAULT_DEMOS) -> list[DemoRun]:
        """Up to ``k`` demonstrations run on ``ctx``'s input (fewer when one fails to run)."""
        if k <= 0 or ctx.mcp is None:
            return []
        ranked = nearest(self.pool(), node.text, list(node.data), MAX_TRIED, node.id, copies=True)
        out = []
        for entry in ranked:  # the next nearest stands in for one this input cannot run
            demo = await run_demo(entry, ctx)
            if demo is not None:
                out.append(demo)
            if len(out) == k:
                break
        return out


def _as_asked(name: str, value: Any) -> Any:
    """An argument as a demonstration shows it: a query's ``time`` at its instant, without the
    1 ms the spec runtime adds for Prometheus 2's window edges (``kit.promql_time``), as the
    paging arguments are left out: server details, not what the procedure reads."""
    if name == "time" and isinstance(value, str) and value.endswith(".001Z"):
        return value[: -len(".001Z")] + "Z"
    return value


async def run_demo(entry: Entry, ctx: ToolContext) -> DemoRun | None:
    """``entry``'s spec run on ``ctx``'s input, its MCP calls recorded; None when it fails."""
    recorder = _Recorder(ctx.mcp)
    try:
        check = Check.from_dict(entry.spec)
        verdict, seen = await trace(check, ctx.input, dataclasses.replace(ctx, mcp=recorder))
    except Exception:  # noqa: BLE001 - a demonstration that cannot run is not shown
        return None
    if not recorder.calls:
        return None
    named = set(PARAM.findall(entry.text))
    params = {k: v for k, v in ctx.params.items() if k in named}
    calls: list[DemoCall] = []
    for server, tool, args, result in recorder.calls:
        call = DemoCall(
            function=function_name(server, tool),
            args={k: _as_asked(k, v) for k, v in args.items() if k not in PAGING},
            result=result,
        )
        if all((c.function, c.args) != (call.function, call.args) for c in calls):
            calls.append(call)  # two measurements reading the same series: one call
    return DemoRun(
        node=entry.node,
        text=with_params(entry.text, params),
        calls=calls,
        compute=computation(check, seen, calls, ctx),
        data=list(entry.data),
        comparison=check.op,
        threshold=Bound.threshold(check.threshold, ctx),
        verdict=verdict.value,
        observed=verdict.observed,
        explanation=verdict.explanation or "",
        score=entry.score,
    )


ACROSS = {"count": "len({x})", "sum": "sum({x})", "max": "max({x})", "min": "min({x})",
          "mean": "sum({x}) / len({x})"}  # fmt: skip


def computation(check: Check, seen: dict[str, Any], calls: list[DemoCall], ctx: Any) -> list[str]:
    """The Python that turns the demonstration's results into its value, as the spec computes
    it: a series measurement from ``series_values`` (scaled, kept, reduced across series), a
    table one from the row that holds its number, a counter's increase
    (or rises) from its rows (``counter_lines``); then the value's formula. Empty when a
    measurement is none of these (the demonstration then prints every result)."""
    lines = []
    for name, m in check.measures.items():
        if name not in seen or not isinstance(seen[name], dict):
            continue
        query, value = seen[name].get("query"), seen[name].get("value")
        at = next((i for i, c in enumerate(calls, 1) if query in (c.args.get("query"),
                                                                    c.args.get("sql"))), None)  # fmt: skip
        if at is not None and m.kind == "series" and not m.per:
            x = f"series_values(r{at})"
            if m.scale != 1:
                x = f"[v * {m.scale:g} for v in {x}]"
            if m.keep is not None:
                x = f"[v for v in {x} if v {m.keep.op} {Bound.threshold(m.keep.threshold, ctx):g}]"
            lines.append(f"{name} = {ACROSS[m.across].format(x=x)}")
            continue
        if at is not None and getattr(m, "reduce", None) in COUNTERS:
            counted = counter_lines(name, m.reduce, at, calls[at - 1].result, value)
            if counted:
                lines += counted
                continue
        cell = _cell(calls[at - 1].result, value) if at is not None else None
        if cell is None:
            # a ratio, an age, a counter's steps: the results are shown instead of a line the
            # model would copy with the number in it
            return []
        lines.append(f"{name} = table_rows(r{at})[0][{cell!r}]")
    scale = f" * {check.scale:g}" if check.scale != 1 else ""
    lines.append(f"value = {check.value}{scale}")
    lines.append("print(value)")
    return lines


def counter_lines(name: str, reduce: str, at: int, result: Any, value: Any) -> list[str]:
    """The Python that sums a counter's steps from its ``(counted, value)`` rows, as the spec
    does (``tools.kit.counter_steps``: a step down is a reset and counts the new value;
    ``rises`` counts the steps above 0), when it computes ``value`` from ``result``; else [].
    Measured without it: a demonstration printed a counter's rows (9, 9, ...) and answered 0;
    the model copied the rows and answered the counter's value."""
    columns = result.get("columns") if isinstance(result, dict) else None
    if value is None or not columns or len(columns) != 2:
        return []
    flag, col = columns
    step = f"step if step >= 0 else row[{col!r}]"
    lines = [
        f"rows = table_rows(r{at})",
        f"{name} = 0",
        "for before, row in zip(rows, rows[1:]):  # the first row is the baseline",
        f"    if row[{flag!r}] and row[{col!r}] is not None and before[{col!r}] is not None:",
        f"        step = row[{col!r}] - before[{col!r}]  # a drop is a reset: the new count",
        f"        {name} += " + (f"({step}) > 0" if reduce == "rises" else step),
    ]
    namespace = {"table_rows": table_rows, f"r{at}": result}
    try:
        exec("\n".join(lines), namespace)  # noqa: S102 - the host's own lines, on recorded rows
    except Exception:  # noqa: BLE001 - rows this code does not fit: the results are shown
        return []
    return lines if math.isclose(float(namespace[name]), float(value), abs_tol=1e-9) else []


def _cell(result: Any, value: Any) -> str | None:
    """The column of a one-row table result whose cell is ``value``."""
    rows = table_rows(result) if isinstance(result, dict) else []
    if len(rows) != 1 or value is None:
        return None
    for column, cell in rows[0].items():
        if isinstance(cell, int | float) and not isinstance(cell, bool) and float(cell) == value:
            return column
    return None
