"""A metric measurement: PromQL ``<reduce>_over_time`` per series, then one number across them.

With ``per``, a second query reads the metric ``per`` the same way and each series becomes
its ratio to the same-labelled ``per`` series (``per`` series with no value or 0 dropped, a
missing numerator series is 0), times ``scale``; ``keep`` and ``across`` then see the ratios.
Each query is asked 1 ms after its instant (``kit.promql_time``: one window on Prometheus 2
and 3) and refuses a truncated answer.

Example:
    >>> query_text(SeriesMeasure(server="robotics", metric="station_idle_pct", minutes=15,
    ...            match={"site": "$site"}), {"site": "BFI4"})
    'avg_over_time(station_idle_pct{site="BFI4"}[15m])'
"""

from __future__ import annotations

import asyncio
import datetime as dt
import statistics
from typing import Any

from sopgraph.tools.kit import Window, promql_series, promql_time, selector
from sopgraph.tools.spec.bind import Bound
from sopgraph.tools.spec.measures import COUNTER_REDUCES, OPS
from sopgraph.tools.spec.model import SeriesMeasure

FUNC = {"mean": "avg"}  # the spec's reduce -> PromQL's function prefix
ACROSS = {"sum": sum, "mean": statistics.fmean, "min": min, "max": max}


def query_text(m: SeriesMeasure, bound: dict[str, Any]) -> str:
    """The PromQL of one measurement (the doctest above; the counter and histogram forms:
    ``rate(x_total{...}[5m])``, ``sum by (job) (increase(...))``, ``histogram_quantile(0.99,
    sum by (le) (rate(x_bucket{...}[5m])))``)."""
    labels = {k: str(Bound(bound).value(v, f"match.{k}")) for k, v in m.match.items()}
    window = Window(dt.datetime(2000, 1, 1, tzinfo=dt.UTC), float(m.minutes or 0))
    metric = f"{m.metric}_bucket" if m.quantile is not None else str(m.metric)
    ranged = f"{selector(metric, **labels)}[{window.promql}]"
    if m.reduce in COUNTER_REDUCES:
        inner = f"{m.reduce}({ranged})"
    else:
        inner = f"{FUNC.get(m.reduce, m.reduce)}_over_time({ranged})"
    if m.quantile is not None:
        by = ", ".join(("le", *m.sum_by))
        return f"histogram_quantile({m.quantile}, sum by ({by}) ({inner}))"
    if m.sum_by:
        return f"sum by ({', '.join(m.sum_by)}) ({inner})"
    return inner


async def read(
    m: SeriesMeasure, bound: dict[str, Any], timestamp: str, ctx: Any
) -> tuple[float | None, str]:
    """The measurement's number (None: no series) and the query that read it."""
    query = query_text(m, bound)
    at = promql_time(timestamp, m.offset_minutes or 0)
    if m.per:
        over = query_text(m.model_copy(update={"metric": m.per, "per": None}), bound)
        tops, bottoms = await asyncio.gather(_series(m, query, at, ctx), _series(m, over, at, ctx))
        query = f"{query} / {over}"
        values = [tops.get(k, 0.0) / v for k, v in bottoms.items() if v]
    else:
        values = list((await _series(m, query, at, ctx)).values())
    values = [v * m.scale for v in values]
    if m.keep is not None:
        limit = Bound(bound).threshold(m.keep.threshold, ctx)
        values = [v for v in values if OPS[m.keep.op](v, limit)]
    if m.across == "count":
        return float(len(values)), query
    if not values:
        # no series: nothing was sampled, so a count of samples is 0, any other reduce none
        return (0.0 if m.reduce == "count" else None), query
    return float(ACROSS[m.across](values)), query


async def _series(m: SeriesMeasure, query: str, at: str, ctx: Any) -> dict[tuple, float]:
    """Each series' value by its labels (one page; a truncated answer is an error).

    The arguments are the ones every Prometheus MCP server takes (``query``, ``time``), no
    paging: ``prometheus-mcp-server`` refuses an argument it does not know.
    """
    res = await ctx.mcp.call(m.server, "execute_query", {"query": query, "time": at})
    return {
        tuple(sorted((s.get("metric") or {}).items())): float(s["value"][1])
        for s in promql_series(res, m.server, query)
        if "value" in s
    }
