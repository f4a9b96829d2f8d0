"""obs_camera_fail_spread: did at least {camera_spread_min} stations each fail >
{camera_alarm_pct}% of camera reads over 15 min?

Robotics conventions: `camera_read_fail_pct` is one 5-minute gauge sample per station (0-100);
the window `[15m]` holds the samples in (t-15m, t]; a station with no samples (exporter down) is
not counted. One query returns every station of the site.
"""

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import selector


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    pct = ctx.params["camera_alarm_pct"]
    needed = ctx.params["camera_spread_min"]
    query = f"avg_over_time({selector('camera_read_fail_pct', site=site)}[15m])"
    res = await ctx.mcp.call(
        "robotics", "execute_query", {"query": query, "time": timestamp, "page_size": 1000}
    )
    if res.get("truncated"):
        raise RuntimeError(f"robotics returned a truncated result for {query}")
    fail = {s["metric"]["station"]: float(s["value"][1]) for s in res["data"]["result"]}
    if not fail:
        return Verdict(
            value="no_data",
            observed=None,
            threshold=needed,
            explanation=f"No station of {site} reported camera samples in the last 15 minutes.",
        )
    stations = sorted(st for st, v in fail.items() if v > pct)
    spread = len(stations) >= needed
    return Verdict(
        value="true" if spread else "false",
        observed={"stations": stations},
        threshold=needed,
        explanation=(
            f"{len(stations)} of {len(fail)} stations of {site} failed more than {pct}% of "
            f"camera reads over the last 15 minutes (need {needed})."
        ),
    )
