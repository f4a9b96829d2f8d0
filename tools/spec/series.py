"""A metric measurement: PromQL ``<reduce>_over_time`` per series, then one number across them.

Example:
    >>> query_text(Measure(server="robotics", metric="station_idle_pct", minutes=15,
    ...            match={"site": "$site"}), {"site": "BFI4"})
    'avg_over_time(station_idle_pct{site="BFI4"}[15m])'
"""

from __future__ import annotations

import datetime as dt
import statistics
from typing import Any

from sopgraph.tools.kit import Window, instant, selector
from sopgraph.tools.spec.bind import OPS, Bound
from sopgraph.tools.spec.model import Measure

FUNC = {"mean": "avg"}  # the spec's reduce -> PromQL's function prefix
ACROSS = {"sum": sum, "mean": statistics.fmean, "min": min, "max": max}


def query_text(m: Measure, bound: dict[str, Any]) -> str:
    labels = {k: str(Bound(bound).value(v, f"match.{k}")) for k, v in m.match.items()}
    window = Window(dt.datetime(2000, 1, 1, tzinfo=dt.UTC), float(m.minutes or 0))
    func = FUNC.get(m.reduce, m.reduce)
    return f"{func}_over_time({selector(str(m.metric), **labels)}[{window.promql}])"


async def read(m: Measure, bound: dict[str, Any], timestamp: str, ctx: Any) -> tuple[float | None, str]:
    """The measurement's number (None: no series) and the query that read it."""
    query = query_text(m, bound)
    at = timestamp
    if m.offset_minutes:
        shifted = instant(timestamp) - dt.timedelta(minutes=m.offset_minutes)
        at = shifted.strftime("%Y-%m-%dT%H:%M:%SZ")
    res = await ctx.mcp.call(m.server, "execute_query", {"query": query, "time": at})
    series = res["data"]["result"] if isinstance(res, dict) else []
    values = [float(s["value"][1]) for s in series or [] if "value" in s]
    if m.keep is not None:
        limit = Bound(bound).threshold(m.keep.threshold, ctx)
        values = [v for v in values if OPS[m.keep.op](v, limit)]
    if m.across == "count":
        return float(len(values)), query
    if not values:
        # no series: nothing was sampled, so a count of samples is 0, any other reduce none
        return (0.0 if m.reduce == "count" else None), query
    return float(ACROSS[m.across](values)), query
