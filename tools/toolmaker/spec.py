"""A tool as a small, checkable schema the tool-maker fills, and its compiler into a tool file.

A small model writes free Python badly but fills a few named fields well. A ``ToolSpec`` says
which MCP server and tool to call, the query with named placeholders, how to reduce the values
it returns, what to compare against which site parameter, and what missing data means. It is
generic: nothing in it names a node, a table or a metric, and ``compile_spec`` turns any spec
into a self-contained tool file (standard library only, so it also runs in the sandbox).

Example:
    >>> spec = ToolSpec(server="robotics", query='avg_over_time(x{site="{site}"}[15m])',
    ...                 aggregate="first", operator=">", threshold="idle_pct_threshold")
    >>> "async def run(input, ctx)" in compile_spec(spec, "obs_x", "Idle > 25%?")
    True
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from sopgraph.graphs.untrusted_text import printable

Aggregate = Literal["first", "last", "sum", "mean", "max", "min", "count"]
Operator = Literal[">", ">=", "<", "<=", "==", "!="]
Outcome = Literal["no_data", "true", "false"]
AGGREGATES: tuple[str, ...] = Aggregate.__args__  # type: ignore[attr-defined]
OPERATORS: tuple[str, ...] = Operator.__args__  # type: ignore[attr-defined]
PLACEHOLDER = re.compile(r"\{([A-Za-z_]\w*)\}")
_CLOSING_QUOTE = re.compile(r'"(?="|\Z)')  # a quote before another, or the text's last
# Placeholders every query may use besides the site's parameter names.
BUILTIN_PLACEHOLDERS = {
    "site": "the alarm's site id",
    "station": "the alarmed station (input field), if any",
    "timestamp": "the alarm time as given (ISO 8601, e.g. 2026-03-02T10:15:00Z)",
    "sql_time": "the alarm time as a naive UTC SQL literal body, e.g. 2026-03-02 10:15:00",
}


class SpecError(ValueError):
    """A spec that cannot compile; ``str()`` says which field and why (fed back to the model)."""


class ToolSpec(BaseModel):
    """One decision as data: query -> values -> one number -> comparison -> verdict."""

    server: str = Field(description="MCP server to query, e.g. robotics")
    tool: str = Field("execute_query", description="the server's query tool")
    query: str = Field(
        description="query text; {name} placeholders: site, station, timestamp, sql_time and "
        "any site parameter; any other brace is literal"
    )
    column: str = Field(
        "", description="result column holding the value (SQL); empty: the first column"
    )
    aggregate: Aggregate = Field("first", description="how the returned values become one")
    operator: Operator = Field(description="verdict is true when `value <operator> threshold`")
    threshold: str = Field(description="a site parameter name, or a number")
    empty: Outcome = Field(
        "no_data", description="verdict when the query returns no value (no rows, all null)"
    )

    @field_validator("server", "tool", "threshold", "column", mode="before")
    @classmethod
    def _strip(cls, v: object) -> object:
        return v.strip().strip("`'\"") if isinstance(v, str) else v

    def placeholders(self) -> list[str]:
        """The ``{name}`` fields the query uses. Other braces (PromQL label matchers
        ``{site="x"}``, SQL) are literal: nobody has to double them."""
        return PLACEHOLDER.findall(self.query)


def check_spec(spec: ToolSpec, params: list[str], servers: dict[str, list[str]]) -> None:
    """Refuse a spec that names an unknown server, tool, placeholder or parameter.

    Args:
        params: the site parameter names the SOP defines.
        servers: server -> its tool names.
    """
    if spec.server not in servers:
        raise SpecError(f"server: {spec.server!r} is not one of {', '.join(sorted(servers))}")
    if spec.tool not in servers[spec.server]:
        raise SpecError(
            f"tool: {spec.server} has no tool {spec.tool!r} "
            f"(it has {', '.join(servers[spec.server])})"
        )
    known = set(params) | set(BUILTIN_PLACEHOLDERS)
    for name in spec.placeholders():
        if name not in known:
            raise SpecError(
                f"query: unknown placeholder {{{name}}}; use one of {', '.join(sorted(known))}"
            )
    if not _is_number(spec.threshold) and spec.threshold not in params:
        raise SpecError(
            f"threshold: {spec.threshold!r} is neither a number nor a site parameter "
            f"({', '.join(sorted(params))})"
        )


def docstring(text: str) -> str:
    """``text`` (a node's text, which anyone may write) as a triple-quoted Python literal that
    always parses and reads back as ``text``: the docstring of a file the tool-maker writes.

    Backslashes are doubled; what `printable` escapes (controls, separators, bidi, and lone
    surrogates, which no UTF-8 file holds) is written as its Python escape; a quote before
    another quote or at the end is escaped, so no three can close the literal early. Newlines
    and every other character stay as they are: the text still reads as written.

    Example:
        >>> print(docstring('Is it "paid"')[3:-3])  # inside the triple quotes
        Is it "paid\\"
    """
    body = printable(text.replace("\\", "\\\\"), multiline=True)
    return '"""' + _CLOSING_QUOTE.sub(r'\\"', body) + '"""'


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def compile_spec(
    spec: ToolSpec,
    node_id: str,
    node_text: str,
    query_arg: str = "query",
    time_arg: str | None = None,
) -> str:
    """The tool file for ``spec``. Every model-written string enters it through ``repr``.

    Args:
        query_arg: the MCP tool's argument that takes the query text (from its input schema).
        time_arg: the argument that takes the evaluation time, if the tool has one.
    """
    threshold = (
        f"float({spec.threshold!r})"
        if _is_number(spec.threshold)
        else f"ctx.params[{spec.threshold!r}]"
    )
    doc = " ".join(node_text.split())[:400]
    head = f"{node_id} (made by the tool-maker from a ToolSpec): {doc}"
    return _TEMPLATE.format(
        docstring=docstring(f"{head}\n\nSpec:\n{spec.model_dump_json(indent=4)}\n"),
        server=repr(spec.server),
        tool=repr(spec.tool),
        query=repr(spec.query),
        column=repr(spec.column),
        aggregate=repr(spec.aggregate),
        operator=repr(spec.operator),
        threshold=threshold,
        empty=repr(spec.empty),
        query_arg=repr(query_arg),
        time_arg=repr(time_arg),
    )


# The runtime every compiled tool carries: standard library only (the sandbox allows no more).
_TEMPLATE = r'''{docstring}

import datetime as dt
import operator
import re
import statistics

from sopgraph.graphs.model import Verdict

SERVER, TOOL = {server}, {tool}
QUERY = {query}
COLUMN = {column}
AGGREGATE = {aggregate}
OPERATOR = {operator}
EMPTY = {empty}
QUERY_ARG, TIME_ARG = {query_arg}, {time_arg}  # from the MCP tool's input schema
_OPS = {{">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le,
        "==": operator.eq, "!=": operator.ne}}
_AGG = {{"first": lambda v: v[0], "last": lambda v: v[-1], "sum": sum, "mean": statistics.fmean,
        "max": max, "min": min, "count": len}}


def _sql_time(timestamp):
    t = dt.datetime.fromisoformat(str(timestamp).replace("Z", "+00:00"))
    if t.tzinfo is not None:
        t = t.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return t.isoformat(sep=" ", timespec="seconds")


def _values(result, column):
    """Numbers in an MCP result: Prometheus-style series or SQL-style rows; nulls dropped."""
    data = result.get("data") if isinstance(result, dict) else None
    if isinstance(data, dict) and "result" in data:
        out = []
        for series in data["result"] or []:
            points = [series["value"]] if "value" in series else series.get("values", [])
            out += [p[1] for p in points]
    else:
        rows = result.get("rows", []) if isinstance(result, dict) else result
        columns = result.get("columns", []) if isinstance(result, dict) else []
        index = columns.index(column) if column and column in columns else 0
        out = []
        for row in rows or []:
            if isinstance(row, dict):
                out.append(row.get(column) if column else next(iter(row.values()), None))
            elif isinstance(row, (list, tuple)) and len(row) > index:
                out.append(row[index])
    numbers = []
    for v in out:
        if v is None or v == "NaN":
            continue
        numbers.append(float(v))
    return numbers


async def run(input, ctx):
    timestamp = str(input.get("timestamp", ""))
    threshold = {threshold}
    fields = dict(ctx.params)
    fields.update(site=str(input.get("site", "")), station=input.get("station") or "",
                  timestamp=timestamp, sql_time=_sql_time(timestamp))
    # {{name}} is a placeholder when it names a field; any other brace is the query's own
    query = re.sub(r"\{{(\w+)\}}", lambda m: str(fields.get(m.group(1), m.group(0))), QUERY)
    args = {{QUERY_ARG: query}}
    if TIME_ARG:
        args[TIME_ARG] = timestamp
    result = await ctx.mcp.call(SERVER, TOOL, args)
    values = _values(result, COLUMN)
    if not values and AGGREGATE != "count":
        return Verdict(value=EMPTY, observed=None, threshold=threshold,
                       explanation=f"the query returned no value: {{EMPTY}}")
    observed = _AGG[AGGREGATE](values)
    holds = _OPS[OPERATOR](observed, float(threshold))
    return Verdict(value="true" if holds else "false", observed=round(observed, 6),
                   threshold=threshold,
                   explanation=f"{{AGGREGATE}} = {{observed:g}} {{OPERATOR}} {{threshold}}: {{holds}}")
'''
