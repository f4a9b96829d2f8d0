"""obs_pick_error_spread: do at least {pick_spread_min} stations each have a 30-min pick error
rate above {pick_error_pct_threshold}%?

Robotics conventions: `pick_errors` and `pick_attempts` are per-5-minute counts, so a station's
rate is sum(errors) / sum(attempts) over (t-30m, t]; a station with no samples or no attempts
has no error rate and is not counted. Two queries cover the whole site.
"""

import asyncio

from sopgraph.graphs.model import Verdict


async def _sums_by_station(ctx, metric: str, site: str, timestamp: str) -> dict[str, float]:
    query = f'sum_over_time({metric}{{site="{site}"}}[30m])'
    res = await ctx.mcp.call(
        "robotics", "execute_query", {"query": query, "time": timestamp, "page_size": 1000}
    )
    if res.get("truncated"):
        raise RuntimeError(f"robotics returned a truncated result for {query}")
    return {s["metric"]["station"]: float(s["value"][1]) for s in res["data"]["result"]}


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    pct = ctx.params["pick_error_pct_threshold"]
    needed = ctx.params["pick_spread_min"]
    errors, attempts = await asyncio.gather(
        _sums_by_station(ctx, "pick_errors", site, timestamp),
        _sums_by_station(ctx, "pick_attempts", site, timestamp),
    )
    if not attempts:
        return Verdict(
            value="no_data",
            observed=None,
            threshold=needed,
            explanation=f"No station of {site} reported pick counts in the last 30 minutes.",
        )
    rates = {st: errors.get(st, 0.0) / n * 100 for st, n in attempts.items() if n > 0}
    stations = sorted(st for st, rate in rates.items() if rate > pct)
    spread = len(stations) >= needed
    return Verdict(
        value="true" if spread else "false",
        observed={"stations": stations},
        threshold=needed,
        explanation=(
            f"{len(stations)} stations of {site} had a pick error rate above {pct}% over the "
            f"last 30 minutes (need {needed})."
        ),
    )
