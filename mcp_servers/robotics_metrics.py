"""Robotics metrics MCP server: a Prometheus-like API over a DuckDB file of long-form samples.

Tools: ``list_metrics``, ``get_metric_metadata``, ``list_label_values``, ``execute_query``
(instant) and ``execute_range_query``, speaking a small PromQL subset (``mcp_servers/promql.py``).
Run: ``python -m sopgraph.mcp_servers.robotics_metrics --db PATH [--transport streamable-http]``.

Like a Prometheus head block, a metric's series are read into memory on first use, so a
query costs microseconds, not a table scan.
"""

from __future__ import annotations

import re
import threading

import duckdb
import numpy as np
from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError

from sopgraph.mcp_servers import drift as drift_mod
from sopgraph.mcp_servers.paging import check_page, slice_items
from sopgraph.mcp_servers.promql import (
    LABELS,
    SUPPORTED,
    Query,
    eval_at,
    matches,
    parse_query,
    parse_step,
    parse_time,
)
from sopgraph.mcp_servers.serving import READ_ONLY, parse_args, serve

ENV_DB = "SOPGRAPH_ROBOTICS_DB"
MAX_POINTS = 11_000  # per series, as Prometheus
MAX_RESPONSE_POINTS = 100_000


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
        self.drifts = drift_mod.load("robotics")
        self._drifted: dict[tuple, list[tuple[dict, np.ndarray, np.ndarray]]] = {}
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

    def _series_at(self, metric: str, at: float | None) -> list:
        """The metric's series as served for a query about instant ``at`` (drift applied)."""
        live = [d for d in drift_mod.active(self.drifts, at) if d.field == metric]
        if not live:
            return self.series(metric)
        key = (metric, tuple(d.kind for d in live))
        if key not in self._drifted:
            out = []
            for labels, t, v in self.series(metric):
                for d in live:
                    if d.kind == "fraction":
                        v = v / 100
                    elif d.kind == "cumulative":  # running total since 06:00 UTC each day
                        day = np.floor((t - 6 * 3600) / 86400)
                        total = np.cumsum(v)
                        starts = np.r_[0, np.flatnonzero(np.diff(day)) + 1]
                        base = np.repeat(
                            np.r_[0.0, total[starts[1:] - 1]], np.diff(np.r_[starts, len(v)])
                        )
                        v = total - base
                out.append((labels, t, v))
            self._drifted[key] = out
        return self._drifted[key]

    def select(
        self, q: Query, at: float | None = None
    ) -> list[tuple[dict, np.ndarray, np.ndarray]]:
        out = []
        for labels, t, v in self._series_at(q.metric, at):
            if all(matches(labels[label], op, want) for label, op, want in q.matchers):
                out.append((labels, t, v))
        return out


def _labels(q: Query, labels: dict) -> dict:
    # Functions drop the metric name from the result, as Prometheus does.
    return labels.copy() if q.func else {"__name__": q.metric, **labels}


def _reply(
    result_type: str, result: list[dict], total: int, page: int, more: bool, nxt: int | None
) -> dict:
    """A Prometheus query response, with the page of series it holds."""
    return {
        "status": "success",
        "data": {"resultType": result_type, "result": result},
        "series_total": total,
        "page": page,
        "truncated": more,
        "next_page": nxt,
    }


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
        at = parse_time(time) if time is not None else None
        series = store.select(q, at)
        if at is None:
            at = max((float(t[-1]) for _, t, _ in series if len(t)), default=0.0)
        result = []
        for labels, t, v in series:
            val = eval_at(q, t, v, at)
            if val is not None:
                result.append({"metric": _labels(q, labels), "value": [at, _fmt(val)]})
        chunk, more, nxt = slice_items(result, page, page_size)
        return _reply("vector", chunk, len(result), page, more, nxt)

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
        series = store.select(q, t1)
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
                val = eval_at(q, t, v, float(at))
                if val is not None:
                    values.append([float(at), _fmt(val)])
            if values:
                result.append({"metric": _labels(q, labels), "values": values})
        return _reply("matrix", result, len(series), page, more, nxt)

    return mcp


def main(argv: list[str] | None = None) -> None:
    args = parse_args("robotics_metrics", ENV_DB, argv)
    serve(build_server(args.db), args)


if __name__ == "__main__":
    main()
