"""A small standard-library kit for compiled tools: instants, windows, selectors, queries, counters.

Tool files (people's and the tool-maker's) import it as ``sopgraph.tools.kit``; the hygiene
test allows it and checks that it imports the standard library only. SQL goes to the MCP
servers with ``?`` parameters, never formatted into the text; a server that takes no
parameters (``execute_sql``) gets each as a quoted SQL literal (``inline_params``).

Example:
    >>> w = Window.ending("2025-03-10T12:00:00Z", minutes=15)
    >>> w.sql_start, w.sql_end
    ('2025-03-10 11:45:00', '2025-03-10 12:00:00')
    >>> selector("station_idle_pct", site="BFI4", station="ST01")
    'station_idle_pct{site="BFI4",station="ST01"}'
"""

from __future__ import annotations

import datetime as dt
import json
import weakref
from dataclasses import dataclass
from typing import Any

SQL_TIME = "%Y-%m-%d %H:%M:%S"  # how both SQL stores write UTC times (no T, no zone)


def instant(timestamp: str | dt.datetime) -> dt.datetime:
    """An ISO 8601 time (``Z``, an offset, or naive meaning UTC) as an aware UTC datetime."""
    t = (
        timestamp
        if isinstance(timestamp, dt.datetime)
        else dt.datetime.fromisoformat(str(timestamp).replace("Z", "+00:00"))
    )
    return t.replace(tzinfo=dt.UTC) if t.tzinfo is None else t.astimezone(dt.UTC)


def sql_time(timestamp: str | dt.datetime) -> str:
    """``YYYY-MM-DD HH:MM:SS`` in UTC: the text the ops store keeps and DuckDB reads."""
    return instant(timestamp).strftime(SQL_TIME)


def from_sql_time(text: str) -> dt.datetime:
    """A store's ``YYYY-MM-DD HH:MM:SS`` (or ISO) UTC text as an aware datetime."""
    return instant(text.replace(" ", "T", 1))


@dataclass(frozen=True)
class Window:
    """The ``minutes`` before ``end``: samples stamped in (start, end] unless said otherwise."""

    end: dt.datetime
    minutes: float

    @classmethod
    def ending(cls, timestamp: str | dt.datetime, minutes: float) -> Window:
        return cls(instant(timestamp), minutes)

    @property
    def start(self) -> dt.datetime:
        return self.end - dt.timedelta(minutes=self.minutes)

    @property
    def sql_start(self) -> str:
        return self.start.strftime(SQL_TIME)

    @property
    def sql_end(self) -> str:
        return self.end.strftime(SQL_TIME)

    @property
    def promql(self) -> str:
        """The PromQL range, e.g. ``15m`` (whole seconds when not whole minutes)."""
        s = int(round(self.minutes * 60))
        return f"{s // 60}m" if s % 60 == 0 else f"{s}s"

    def shifted(self, minutes: float) -> Window:
        """The same length, ending ``minutes`` earlier (the hour before, say)."""
        return Window(self.end - dt.timedelta(minutes=minutes), self.minutes)


def label_value(value: str) -> str:
    """A PromQL label value as a double-quoted string literal."""
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def selector(metric: str, **labels: str) -> str:
    """``metric{label="value",...}`` with every value quoted safely."""
    inner = ",".join(f"{k}={label_value(v)}" for k, v in labels.items())
    return f"{metric}{{{inner}}}"


def promql_time(timestamp: str | dt.datetime, minutes_earlier: float = 0.0) -> str:
    """The ``time`` of an instant query about ``timestamp`` (``minutes_earlier`` before it): 1 ms
    after that instant, in RFC 3339.

    A range ``[15m]`` at t holds the samples in (t-15m, t] on Prometheus 3 and on sopgraph's
    metrics server, but in [t-15m, t] on Prometheus 2 (Debian's 2.42), whose ranges include their
    start. Asked 1 ms later, all of them hold (t-15m, t] of samples stamped in whole seconds, so
    one query text means one window on every server.

    Example:
        >>> promql_time("2025-03-10T12:00:00Z", minutes_earlier=60)
        '2025-03-10T11:00:00.001Z'
    """
    at = instant(timestamp) - dt.timedelta(minutes=minutes_earlier, milliseconds=-1)
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


def promql_series(res: Any, server: str, query: str) -> list[dict]:
    """The series of a query's answer, in either shape: the Prometheus HTTP API's
    ``{"status", "data": {"result"}}`` (sopgraph's metrics server) or the ``{"resultType",
    "result"}`` of ``prometheus-mcp-server``. A truncated page is an error, not a partial sum."""
    if not isinstance(res, dict):
        return []
    if res.get("truncated"):
        raise RuntimeError(f"{server} returned a truncated result for {query}")
    data = res.get("data", res)
    return list((data.get("result") if isinstance(data, dict) else None) or [])


def counter_steps(rows: list[list] | list[tuple]) -> list[int | float]:
    """The steps of a cumulative counter that resets, from ``(counted, value)`` rows in time order.

    A row's step is its value less the previous row's; a step down is a reset and counts the
    new value (Prometheus ``increase``). A row gives a step only when ``counted`` is true (say,
    the query's ``t > window start``) and both its value and the previous row's are not null;
    the first row is only a baseline. The same as SQL's ``lag(v) OVER (ORDER BY t)`` with
    ``CASE WHEN v >= prev THEN v - prev ELSE v END``, at the cost of a plain SELECT.

    Example:
        >>> counter_steps([(False, 5), (True, 7), (True, 2), (True, None), (True, 4)])
        [2, 2]
    """
    steps: list[int | float] = []
    prev = None
    for i, (counted, value) in enumerate(rows):
        if i and counted and value is not None and prev is not None:
            steps.append(value - prev if value >= prev else value)
        prev = value
    return steps


async def sql(ctx: Any, server: str, text: str, *params: Any, max_pages: int = 50) -> list[list]:
    """Every row of one parameterised SELECT on ``server`` (``?`` placeholders), all pages.

    sopgraph's SQL servers take ``execute_query(sql, params, page)``. A server whose list has
    ``execute_sql(sql)`` and no ``execute_query`` (database-mcp-postgres, the PyPI server in
    front of a real PostgreSQL) gets the statement with each parameter written as an SQL
    literal (``sql_literal``), and its ``{"columns", "rows"}`` answer as rows of values."""
    if await _sql_tool(ctx, server) == "execute_sql":
        return await _execute_sql(ctx, server, inline_params(text, params))
    rows: list[list] = []
    page = 0
    while True:
        args: dict[str, Any] = {"sql": text, "params": list(params), "page": page}
        res = await ctx.mcp.call(server, "execute_query", args)
        rows += res["rows"]
        if not res.get("truncated"):
            return rows
        page = res.get("next_page", page + 1)
        if page >= max_pages:
            raise RuntimeError(f"{server}: more than {max_pages} pages of rows; narrow the query")


_SQL_TOOLS: weakref.WeakKeyDictionary[Any, dict[str, str]] = weakref.WeakKeyDictionary()


async def _sql_tool(ctx: Any, server: str) -> str:
    """The server's SQL tool, read once per pool from its tool list (no list: execute_query)."""
    pool = ctx.mcp
    try:
        known = _SQL_TOOLS.setdefault(pool, {})
    except TypeError:  # a pool that takes no weak reference: ask each time
        known = {}
    if server not in known:
        lister = getattr(pool, "list_tools", None)
        names = {t.name for t in await lister(server)} if lister is not None else set()
        plain = "execute_sql" in names and "execute_query" not in names
        known[server] = "execute_sql" if plain else "execute_query"
    return known[server]


def sql_literal(value: Any) -> str:
    """``value`` as an SQL literal: NULL, TRUE/FALSE, a number, or quoted text (quotes doubled,
    as standard SQL and PostgreSQL's standard_conforming_strings read it)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{value!r} has no SQL literal")
        return repr(value)
    text = str(value)
    if "\x00" in text:
        raise ValueError("text with a NUL character has no SQL literal")
    return "'" + text.replace("'", "''") + "'"


def inline_params(text: str, params: tuple[Any, ...] | list[Any]) -> str:
    """``text`` with each ``?`` outside a quoted string or identifier replaced by its
    parameter's literal, in order; a count that does not match is an error."""
    out, i, quote = [], 0, ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in ("'", '"'):
            quote = ch
        elif ch == "?":
            if i >= len(params):
                raise ValueError(f"{text!r}: more ? placeholders than the {len(params)} parameters")
            out.append(sql_literal(params[i]))
            i += 1
            continue
        out.append(ch)
    if i != len(params):
        raise ValueError(f"{text!r}: {i} ? placeholders for {len(params)} parameters")
    return "".join(out)


async def _execute_sql(ctx: Any, server: str, text: str) -> list[list]:
    res = await _statement(ctx, server, text)
    columns = res["columns"]
    if len(set(columns)) < len(columns):
        # rows come as objects keyed by column name, so two columns named alike (``avg``,
        # ``avg``) would collapse: the same statement again, its columns renamed in order
        names = ", ".join(f'"c{i}"' for i in range(len(columns)))
        res = await _statement(ctx, server, f"SELECT * FROM ({text}) AS q({names})")
        columns = res["columns"]
    return [[row.get(c) for c in columns] if isinstance(row, dict) else row for row in res["rows"]]


async def _statement(ctx: Any, server: str, text: str) -> dict[str, Any]:
    res = await ctx.mcp.call(server, "execute_sql", {"sql": text})
    if isinstance(res, str):  # "N rows" then the JSON: database-mcp-core's answer
        first, _, rest = res.partition("\n")
        if first.startswith("truncated"):
            raise RuntimeError(
                f"{server}: {first}; narrow the query or raise the server's max rows"
            )
        res = json.loads(rest)
    return res


def as_number(value: Any) -> float:
    """A served value as a float; a value of any other kind is an error, not a guess."""
    if isinstance(value, bool):
        raise TypeError(f"expected a number, got the boolean {value!r}")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return float(value)  # the Prometheus API serves sample values as strings
    raise TypeError(f"expected a number, got {type(value).__name__} {value!r}")
