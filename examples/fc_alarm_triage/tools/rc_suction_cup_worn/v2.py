"""rc_suction_cup_worn: did the robot's suction vacuum average below {suction_vacuum_min_kpa}
kPa over the last 30 min?

Robotics conventions: `suction_vacuum_kpa` is one gauge sample per station every 5 minutes (mean
kPa over the interval); an instant query's `[30m]` window holds the samples in (t-30m, t],
averaged as equal 5-minute intervals; a station whose exporter is down has no samples: no data.
"""

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import selector


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    threshold = ctx.params["suction_vacuum_min_kpa"]
    station = input["station"]
    query = f"avg_over_time({selector('suction_vacuum_kpa', site=site, station=station)}[30m])"
    res = await ctx.mcp.call("robotics", "execute_query", {"query": query, "time": timestamp})
    series = res["data"]["result"]
    if not series:
        return Verdict(
            value="no_data",
            observed=None,
            threshold=threshold,
            explanation=(
                f"{site} {station} reported no suction_vacuum_kpa samples in the last 30 minutes."
            ),
        )
    value = float(series[0]["value"][1])
    hit = value < threshold
    return Verdict(
        value="true" if hit else "false",
        observed=round(value, 6),
        threshold=threshold,
        explanation=(
            f"{site} {station} suction vacuum averaged {value:.2f} kPa over the last 30 minutes "
            f"({'below' if hit else 'not below'} {threshold} kPa)."
        ),
    )
