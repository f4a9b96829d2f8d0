"""obs_idle_spread: were at least {min_idle_stations} of the site's stations each idle >
{idle_pct_threshold}%?

Robotics conventions: `station_idle_pct` is one 5-minute gauge sample per station; the window
`[15m]` holds the samples in (t-15m, t]; a station with no samples (exporter down) is not
counted as idle. One query returns every station of the site.
"""

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import selector


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    pct = ctx.params["idle_pct_threshold"]
    needed = ctx.params["min_idle_stations"]
    query = f"avg_over_time({selector('station_idle_pct', site=site)}[15m])"
    res = await ctx.mcp.call(
        "robotics", "execute_query", {"query": query, "time": timestamp, "page_size": 1000}
    )
    if res.get("truncated"):
        raise RuntimeError(f"robotics returned a truncated result for {query}")
    idle = {s["metric"]["station"]: float(s["value"][1]) for s in res["data"]["result"]}
    if not idle:
        return Verdict(
            value="no_data",
            observed=None,
            threshold=needed,
            explanation=f"No station of {site} reported idle samples in the last 15 minutes.",
        )
    stations = sorted(st for st, v in idle.items() if v > pct)
    spread = len(stations) >= needed
    return Verdict(
        value="true" if spread else "false",
        observed={"idle_stations": stations},
        threshold=needed,
        explanation=(
            f"{len(stations)} of {len(idle)} stations of {site} were idle more than {pct}% "
            f"of the last 15 minutes (need {needed})."
        ),
    )
