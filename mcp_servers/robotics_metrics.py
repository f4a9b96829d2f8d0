"""Robotics metrics MCP server: a Prometheus-like API over a DuckDB file of long-form samples.

Tools: ``list_metrics``, ``get_metric_metadata``, ``list_label_values``, ``execute_query``
(instant) and ``execute_range_query``, speaking a small PromQL subset (see ``SUPPORTED``).
Run: ``python -m mcp_servers.robotics_metrics --db PATH [--transport streamable-http]``.

Like a Prometheus head block, a metric's series are read into memory on first use, so a
query costs microseconds, not a table scan.
"""

from __future__ import annotations

import datetime as dt
import re
import threading
from dataclasses import dataclass

import duckdb
import numpy as np
from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError

from mcp_servers.paging import READ_ONLY, check_page, parse_args, serve, slice_items

ENV_DB = "SOPGRAPH_ROBOTICS_DB"
LABELS = ("site", "station", "robot")
LOOKBACK_S = 300  # an instant selector sees the latest sample up to 5 minutes old
MAX_POINTS = 11_000  # per series, as Prometheus
MAX_RESPONSE_POINTS = 100_000
FUNCS = ("avg", "min", "max", "sum", "count", "last")
SUPPORTED = (
    'supported: metric{label="v",...} with = != =~ !~ on labels site/station/robot, '
    "and avg|min|max|sum|count|last_over_time(selector[15m])"
)
_TOKEN = re.compile(
    r"""\s*(?:(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)|(?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')"""
    r"""|(?P<dur>\d+[smhd])|(?P<num>\d+(?:\.\d+)?)|(?P<op>=~|!~|!=|=)|(?P<punct>[{}(),\[\]]))"""
)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class Query:
    """A parsed query: ``func`` is None for a plain selector."""

    metric: str
    matchers: tuple[tuple[str, str, str], ...]
    func: str | None = None
    range_s: int = 0


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out, i = [], 0
    while i < len(text):
        if text[i:].strip() == "":
            break
        m = _TOKEN.match(text, i)
        if not m or m.end() == i:
            raise ToolError(
                f"parse error at char {i}: unexpected '{text[i : i + 10].strip()}'; {SUPPORTED}"
            )
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind), m.start(kind)))
        i = m.end()
    return out


def parse_query(text: str) -> Query:
    """Parse the PromQL subset; raises ToolError with a one-line message."""
    toks = _tokens(text or "")
    pos = 0

    def peek(k: int = 0) -> tuple[str, str, int]:
        return toks[pos + k] if pos + k < len(toks) else ("end", "", len(text or ""))

    def take(kind: str, value: str | None = None, what: str = "") -> str:
        nonlocal pos
        k, v, at = peek()
        if k != kind or (value is not None and v != value):
            raise ToolError(
                f"parse error at char {at}: expected {what or value or kind}, got '{v or 'end of query'}'; {SUPPORTED}"
            )
        pos += 1
        return v

    func, range_s = None, 0
    if peek()[0] == "name" and peek(1)[1] == "(":
        name = peek()[1]
        if not name.endswith("_over_time") or name.removesuffix("_over_time") not in FUNCS:
            raise ToolError(f"unsupported function '{name}'; {SUPPORTED}")
        func = name.removesuffix("_over_time")
        pos += 2
    metric = take("name", what="a metric name")
    matchers = []
    if peek()[1] == "{":
        pos += 1
        while peek()[1] != "}":
            label = take("name", what="a label name")
            op = take("op", what="one of = != =~ !~")
            raw = take("str", what="a quoted string")
            matchers.append((label, op, raw[1:-1].encode().decode("unicode_escape")))
            if peek()[1] == ",":
                pos += 1
            elif peek()[1] != "}":
                take("punct", "}")
        pos += 1
    if func:
        take("punct", "[", "'[' and a range such as [15m]")
        dur = take("dur", what="a duration such as 15m")
        range_s = int(dur[:-1]) * _UNITS[dur[-1]]
        take("punct", "]")
        take("punct", ")")
    elif peek()[1] == "[":
        raise ToolError(
            f"a range vector cannot be returned; wrap it, e.g. avg_over_time({metric}[15m])"
        )
    if peek()[0] != "end":
        k, v, at = peek()
        raise ToolError(f"parse error at char {at}: expected end of query, got '{v}'; {SUPPORTED}")
    for label, _, _ in matchers:
        if label not in LABELS:
            raise ToolError(f"unknown label '{label}'; labels are {', '.join(LABELS)}")
    return Query(metric, tuple(matchers), func, range_s)


def parse_time(value: str | float | int, what: str = "time") -> float:
    """RFC 3339 (``2025-03-10T14:05:00Z``) or unix seconds."""
    if isinstance(value, int | float):
        return float(value)
    text = str(value).strip()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ToolError(
            f"bad {what} '{value}': use RFC 3339 like 2025-03-10T14:05:00Z or unix seconds"
        ) from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.UTC)
    return t.timestamp()


def parse_step(value: str | float | int) -> float:
    if isinstance(value, int | float):
        step = float(value)
    else:
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)([smhd]?)\s*", str(value))
        if not m:
            raise ToolError(f"bad step '{value}': use a duration like 5m or seconds like 300")
        step = float(m.group(1)) * _UNITS.get(m.group(2) or "s", 1)
    if step <= 0:
        raise ToolError("step must be positive")
    return step


def _fmt(v: float) -> str:
    """Sample values are strings, as in the Prometheus HTTP API."""
    return str(int(v)) if float(v).is_integer() else repr(float(v))


class SeriesStore:
    """Series of each metric, loaded once: labels, sorted timestamps, values."""

    def __init__(self, db: str, preload: bool = True):
        self.con = duckdb.connect(db, read_only=True)
        rows = self.con.execute(
            "SELECT metric, type, unit, help FROM metric_metadata ORDER BY metric"
        ).fetchall()
        self.meta = {r[0]: {"metric": r[0], "type": r[1], "unit": r[2], "help": r[3]} for r in rows}
        self.names = sorted(
            r[0] for r in self.con.execute("SELECT DISTINCT metric FROM samples").fetchall()
        )
        self._cache: dict[str, list[tuple[dict, np.ndarray, np.ndarray]]] = {}
        self._lock = threading.Lock()
        if preload:
            # Warm every metric in the background so the first alarms do not pay for it.
            threading.Thread(target=self._preload, daemon=True).start()

    def _preload(self) -> None:
        cur = self.con.cursor()  # a DuckDB connection is not shared across threads
        for name in self.names:
            self.series(name, cur)

    def series(
        self, metric: str, cur: duckdb.DuckDBPyConnection | None = None
    ) -> list[tuple[dict, np.ndarray, np.ndarray]]:
        if metric in self._cache:
            return self._cache[metric]
        if metric not in self.names:
            close = [n for n in self.names if metric.split("_")[0] in n][:5]
            hint = f"; did you mean {', '.join(close)}?" if close else "; see list_metrics"
            raise ToolError(f"unknown metric '{metric}'{hint}")
        with self._lock:
            if metric not in self._cache:
                self._cache[metric] = self._load(metric, cur or self.con)
        return self._cache[metric]

    @staticmethod
    def _load(metric: str, con: duckdb.DuckDBPyConnection) -> list:
        keys = con.execute(
            "SELECT site, station, robot, count(*) FROM samples WHERE metric = ? "
            "GROUP BY ALL ORDER BY site, station, robot",
            [metric],
        ).fetchall()
        data = con.execute(
            "SELECT epoch(ts) AS t, value FROM samples WHERE metric = ? "
            "ORDER BY site, station, robot, ts",
            [metric],
        ).fetchnumpy()
        t = np.asarray(data["t"], dtype=np.float64)
        v = np.asarray(data["value"], dtype=np.float64)
        out, at = [], 0
        for site, station, robot, n in keys:
            labels = {"site": site, "station": station, "robot": robot}
            out.append((labels, t[at : at + n], v[at : at + n]))
            at += n
        return out

    def select(self, q: Query) -> list[tuple[dict, np.ndarray, np.ndarray]]:
        out = []
        for labels, t, v in self.series(q.metric):
            if all(_match(labels[label], op, want) for label, op, want in q.matchers):
                out.append((labels, t, v))
        return out


def _match(have: str, op: str, want: str) -> bool:
    if op == "=":
        return have == want
    if op == "!=":
        return have != want
    try:
        hit = re.fullmatch(want, have) is not None
    except re.error as exc:
        raise ToolError(f"bad regular expression '{want}': {exc}") from None
    return hit if op == "=~" else not hit


def _eval_at(q: Query, t: np.ndarray, v: np.ndarray, at: float) -> float | None:
    """The query's value for one series at one instant (window is (at - range, at])."""
    width = q.range_s if q.func else LOOKBACK_S
    lo = int(np.searchsorted(t, at - width, side="right"))
    hi = int(np.searchsorted(t, at, side="right"))
    if hi <= lo:
        return None
    w = v[lo:hi]
    if q.func is None or q.func == "last":
        return float(w[-1])
    return float(
        {"avg": np.mean, "min": np.min, "max": np.max, "sum": np.sum, "count": len}[q.func](w)
    )


def _labels(q: Query, labels: dict) -> dict:
    # Functions drop the metric name from the result, as Prometheus does.
    return labels.copy() if q.func else {"__name__": q.metric, **labels}


def build_server(db: str, preload: bool = True) -> FastMCP:
    """A server over the DuckDB file ``db`` (tables ``samples`` and ``metric_metadata``).

    ``preload`` warms every metric in a background thread (off when embedded in-process).
    """
    store = SeriesStore(db, preload=preload)
    mcp = FastMCP(
        "robotics_metrics",
        log_level="WARNING",  # a log line per request costs more than the query
        instructions=(
            "Prometheus-like metrics of the dock's robotic induct stations. Discover with "
            "list_metrics and get_metric_metadata; query with execute_query (instant) or "
            f"execute_range_query. {SUPPORTED}. Series are paged; when truncated is true, "
            "ask for next_page."
        ),
    )

    @mcp.tool(annotations=READ_ONLY)
    def list_metrics(match: str | None = None, page: int = 0, page_size: int = 100) -> dict:
        """List metric names, optionally those a regular expression finds in the name.

        Args:
            match: regular expression searched in each name (e.g. "pick"); all when empty.
            page: page number, from 0.
            page_size: names per page, 1 to 1000.
        """
        check_page(page, page_size)
        names = store.names
        if match:
            try:
                names = [n for n in names if re.search(match, n)]
            except re.error as exc:
                raise ToolError(f"bad regular expression '{match}': {exc}") from None
        chunk, more, nxt = slice_items(names, page, page_size)
        return {
            "metrics": chunk,
            "total": len(names),
            "page": page,
            "truncated": more,
            "next_page": nxt,
        }

    @mcp.tool(annotations=READ_ONLY)
    def get_metric_metadata(metric: str) -> dict:
        """Type, unit, help text, labels and series count of one metric.

        Args:
            metric: a metric name from list_metrics.
        """
        series = store.series(metric)
        meta = store.meta.get(metric, {"metric": metric, "type": "unknown", "unit": "", "help": ""})
        return meta | {"labels": list(LABELS), "series": len(series)}

    @mcp.tool(annotations=READ_ONLY)
    def list_label_values(label: str, metric: str | None = None) -> dict:
        """Values a label takes (across one metric, or the first metric when none given).

        Args:
            label: one of site, station, robot.
            metric: restrict to this metric's series.
        """
        if label not in LABELS:
            raise ToolError(f"unknown label '{label}'; labels are {', '.join(LABELS)}")
        series = store.series(metric or store.names[0])
        return {"label": label, "values": sorted({s[0][label] for s in series})}

    @mcp.tool(annotations=READ_ONLY)
    def execute_query(
        query: str, time: str | None = None, page: int = 0, page_size: int = 100
    ) -> dict:
        """Evaluate a query at one instant (Prometheus instant query, resultType vector).

        Args:
            query: PromQL subset, e.g. avg_over_time(station_idle_pct{site="BFI4"}[15m]).
            time: evaluation instant, RFC 3339 or unix seconds; default: the latest sample.
            page: page of series, from 0.
            page_size: series per page, 1 to 1000.

        Each result is {"metric": labels, "value": [unix_seconds, "value as string"]};
        series without a sample in the window are left out.
        """
        check_page(page, page_size)
        q = parse_query(query)
        series = store.select(q)
        at = (
            parse_time(time)
            if time is not None
            else max((float(t[-1]) for _, t, _ in series if len(t)), default=0.0)
        )
        result = []
        for labels, t, v in series:
            val = _eval_at(q, t, v, at)
            if val is not None:
                result.append({"metric": _labels(q, labels), "value": [at, _fmt(val)]})
        chunk, more, nxt = slice_items(result, page, page_size)
        return {
            "status": "success",
            "data": {"resultType": "vector", "result": chunk},
            "series_total": len(result),
            "page": page,
            "truncated": more,
            "next_page": nxt,
        }

    @mcp.tool(annotations=READ_ONLY)
    def execute_range_query(
        query: str, start: str, end: str, step: str = "5m", page: int = 0, page_size: int = 100
    ) -> dict:
        """Evaluate a query at every step from start to end (Prometheus range query, matrix).

        Args:
            query: PromQL subset, e.g. station_idle_pct{site="BFI4",station="ST03"}.
            start: first instant, RFC 3339 or unix seconds.
            end: last instant (inclusive), RFC 3339 or unix seconds.
            step: resolution, a duration like 5m or seconds; at most 11000 steps.
            page: page of series, from 0.
            page_size: series per page, 1 to 1000.

        Each result is {"metric": labels, "values": [[unix_seconds, "value"], ...]}; steps
        without a sample in the window are left out.
        """
        check_page(page, page_size)
        q = parse_query(query)
        t0, t1, s = parse_time(start, "start"), parse_time(end, "end"), parse_step(step)
        if t1 < t0:
            raise ToolError("end is before start; swap them")
        n_steps = int((t1 - t0) // s) + 1
        if n_steps > MAX_POINTS:
            raise ToolError(
                f"{n_steps} points per series exceed the limit of {MAX_POINTS}; raise step or narrow the range"
            )
        steps = t0 + s * np.arange(n_steps)
        series = store.select(q)
        chunk, more, nxt = slice_items(series, page, page_size)
        if len(chunk) * n_steps > MAX_RESPONSE_POINTS:
            fit = max(1, MAX_RESPONSE_POINTS // n_steps)
            raise ToolError(
                f"{len(chunk)} series x {n_steps} steps exceed {MAX_RESPONSE_POINTS} points; "
                f"use page_size={fit}, a larger step or more label matchers"
            )
        result = []
        for labels, t, v in chunk:
            values = []
            for at in steps:
                val = _eval_at(q, t, v, float(at))
                if val is not None:
                    values.append([float(at), _fmt(val)])
            if values:
                result.append({"metric": _labels(q, labels), "values": values})
        return {
            "status": "success",
            "data": {"resultType": "matrix", "result": result},
            "series_total": len(series),
            "page": page,
            "truncated": more,
            "next_page": nxt,
        }

    return mcp


def main(argv: list[str] | None = None) -> None:
    args = parse_args("robotics_metrics", ENV_DB, argv)
    serve(build_server(args.db), args)


if __name__ == "__main__":
    main()
