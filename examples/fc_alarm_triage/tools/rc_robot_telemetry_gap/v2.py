"""rc_robot_telemetry_gap: has the station's robot reported no metrics in the last 15 minutes?

Robotics conventions: every robot exports all its gauges together every 5 minutes, so an
exporter outage removes every metric at once; `station_idle_pct` (the SOP's data hint) is always
exported while the exporter is up, so counting its samples in (t-15m, t] is enough.
"""

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import selector

# "No metrics at all": the definition, not a tunable threshold.
_NONE = 0


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    station = input["station"]
    query = f"count_over_time({selector('station_idle_pct', site=site, station=station)}[15m])"
    res = await ctx.mcp.call("robotics", "execute_query", {"query": query, "time": timestamp})
    # A series with no sample in the window is left out of the result: zero samples.
    samples = sum(int(float(s["value"][1])) for s in res["data"]["result"])
    gap = samples == _NONE
    return Verdict(
        value="true" if gap else "false",
        observed={"samples": samples},
        threshold=_NONE,
        explanation=(
            f"{site} {station} reported no metrics in the last 15 minutes."
            if gap
            else f"{site} {station} reported {samples} samples in the last 15 minutes."
        ),
    )
