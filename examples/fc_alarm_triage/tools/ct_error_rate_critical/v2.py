"""ct_error_rate_critical: is the station's pick error rate over the last 15 min at least
{critical_pick_error_pct}%?

Robotics conventions: `pick_errors` and `pick_attempts` are per-5-minute counts (gauges, no
counter resets), so the window's rate is sum(errors) / sum(attempts), not the mean of the
per-interval `pick_error_pct` (which is absent for intervals without attempts). No samples at
all means no data; samples with zero attempts mean the robot picked nothing: no errors.
"""

import asyncio

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import selector

_WINDOW = "15m"


async def _window_sum(ctx, metric: str, site: str, station: str, timestamp: str) -> float | None:
    query = f"sum_over_time({selector(metric, site=site, station=station)}[{_WINDOW}])"
    res = await ctx.mcp.call("robotics", "execute_query", {"query": query, "time": timestamp})
    series = res["data"]["result"]
    return float(series[0]["value"][1]) if series else None


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    threshold = ctx.params["critical_pick_error_pct"]
    station = input["station"]
    errors, attempts = await asyncio.gather(
        _window_sum(ctx, "pick_errors", site, station, timestamp),
        _window_sum(ctx, "pick_attempts", site, station, timestamp),
    )
    if attempts is None:
        return Verdict(
            value="no_data",
            observed=None,
            threshold=threshold,
            explanation=f"{site} {station} reported no pick counts in the last 15 minutes.",
        )
    if attempts == 0:
        return Verdict(
            value="false",
            observed={"attempts": 0},
            threshold=threshold,
            explanation=f"{site} {station} made no pick attempts in the last 15 minutes.",
        )
    rate = (errors or 0.0) / attempts * 100
    critical = rate >= threshold
    return Verdict(
        value="true" if critical else "false",
        observed=round(rate, 6),
        threshold=threshold,
        explanation=(
            f"{site} {station} pick error rate {rate:.2f}% over the last 15 minutes "
            f"({'at or above' if critical else 'below'} {threshold}%)."
        ),
    )
