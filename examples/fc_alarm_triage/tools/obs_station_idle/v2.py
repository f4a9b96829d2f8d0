"""obs_station_idle: was the alarmed station idle more than {idle_pct_threshold}% of the last 15
min?

Robotics conventions: `station_idle_pct` is one gauge sample per station every 5 minutes (share
of that interval, 0-100); an instant query's `[15m]` window holds the samples in (t-15m, t]; a
station whose exporter is down has no samples (no_data, not 0% idle).
"""

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import selector


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    threshold = ctx.params["idle_pct_threshold"]
    station = input["station"]
    query = f"avg_over_time({selector('station_idle_pct', site=site, station=station)}[15m])"
    res = await ctx.mcp.call("robotics", "execute_query", {"query": query, "time": timestamp})
    series = res["data"]["result"]
    if not series:
        return Verdict(
            value="no_data",
            observed=None,
            threshold=threshold,
            explanation=f"{site} {station} reported no idle samples in the last 15 minutes.",
        )
    idle = float(series[0]["value"][1])
    over = idle > threshold
    return Verdict(
        value="true" if over else "false",
        observed=round(idle, 6),
        threshold=threshold,
        explanation=(
            f"{site} {station} was idle {idle:.1f}% of the last 15 minutes "
            f"({'above' if over else 'not above'} {threshold}%)."
        ),
    )
