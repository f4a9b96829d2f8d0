"""rc_label_defects: did more than {label_fail_pct_threshold}% of the station's labels fail over
the last 30 min?

Robotics conventions: `label_print_fail_pct` is one gauge sample per station every 5 minutes
(share of print-and-apply cycles that failed, 0-100); an instant query's `[30m]` window holds
the samples in (t-30m, t], averaged as equal 5-minute intervals; a station whose exporter is
down has no samples: no data.
"""

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import selector


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    threshold = ctx.params["label_fail_pct_threshold"]
    station = input["station"]
    query = f"avg_over_time({selector('label_print_fail_pct', site=site, station=station)}[30m])"
    res = await ctx.mcp.call("robotics", "execute_query", {"query": query, "time": timestamp})
    series = res["data"]["result"]
    if not series:
        return Verdict(
            value="no_data",
            observed=None,
            threshold=threshold,
            explanation=(
                f"{site} {station} reported no label_print_fail_pct samples in the last 30 minutes."
            ),
        )
    value = float(series[0]["value"][1])
    hit = value > threshold
    return Verdict(
        value="true" if hit else "false",
        observed=round(value, 6),
        threshold=threshold,
        explanation=(
            f"{site} {station} label failures averaged {value:.2f}% over the last 30 minutes "
            f"({'above' if hit else 'not above'} {threshold}%)."
        ),
    )
