"""obs_camera_fail_high: did the station's camera fail more than {camera_alarm_pct}% of its
reads over the last 15 min?

Robotics conventions: `camera_read_fail_pct` is one gauge sample per station every 5 minutes
(share of reads that failed, 0-100); an instant query's `[15m]` window holds the samples in
(t-15m, t], averaged as equal 5-minute intervals; a station whose exporter is down has no
samples: no data.
"""

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import selector


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    threshold = ctx.params["camera_alarm_pct"]
    station = input["station"]
    query = f"avg_over_time({selector('camera_read_fail_pct', site=site, station=station)}[15m])"
    res = await ctx.mcp.call("robotics", "execute_query", {"query": query, "time": timestamp})
    series = res["data"]["result"]
    if not series:
        return Verdict(
            value="no_data",
            observed=None,
            threshold=threshold,
            explanation=(
                f"{site} {station} reported no camera_read_fail_pct samples in the last 15 minutes."
            ),
        )
    value = float(series[0]["value"][1])
    hit = value > threshold
    return Verdict(
        value="true" if hit else "false",
        observed=round(value, 6),
        threshold=threshold,
        explanation=(
            f"{site} {station} camera read failures averaged {value:.2f}% over the last 15 minutes "
            f"({'above' if hit else 'not above'} {threshold}%)."
        ),
    )
