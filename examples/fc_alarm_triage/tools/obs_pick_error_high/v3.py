"""obs_pick_error_high: is the station's pick error rate over the last 30 min above
{pick_error_pct_threshold}%?

Robotics conventions: `pick_errors` and `pick_attempts` are per-5-minute counts (gauges, no
counter resets), so the window's rate is sum(errors) / sum(attempts), not the mean of the
per-interval `pick_error_pct` (which is absent for intervals without attempts). No samples at
all means no data; samples with zero attempts mean the robot picked nothing: no errors (false).
A spec: sum_over_time of each count over (t-30m, t] for the alarmed station, errors absent
counted as 0, the ratio in percent.
"""

from sopgraph.tools.spec import Check, Measure, tool

SPEC = Check(
    measures={
        "errors": Measure(
            server="robotics", metric="pick_errors", minutes=30, reduce="sum", default=0,
            match={"site": "$site", "station": "$station"},
        ),
        "attempts": Measure(
            server="robotics", metric="pick_attempts", minutes=30, reduce="sum",
            match={"site": "$site", "station": "$station"},
        ),
    },
    value="errors / attempts", scale=100, op=">", threshold="pick_error_pct_threshold", unit="%",
    zero_division="false",
)
run = tool(SPEC)
