"""ct_error_rate_critical: is the station's pick error rate over the last 15 min at least
{critical_pick_error_pct}%?

Robotics conventions: `pick_errors` and `pick_attempts` are per-5-minute counts (gauges, no
counter resets), so the window's rate is sum(errors) / sum(attempts), not the mean of the
per-interval `pick_error_pct` (which is absent for intervals without attempts). No samples at
all means no data; samples with zero attempts mean the robot picked nothing: no errors (false).
A spec: sum_over_time of each count over (t-15m, t] for the alarmed station, errors absent
counted as 0, the ratio in percent.
"""

from sopgraph.tools.spec import Check, Measure, tool

SPEC = Check(
    measures={
        "errors": Measure(
            server="robotics", metric="pick_errors", minutes=15, reduce="sum", default=0,
            match={"site": "$site", "station": "$station"},
        ),
        "attempts": Measure(
            server="robotics", metric="pick_attempts", minutes=15, reduce="sum",
            match={"site": "$site", "station": "$station"},
        ),
    },
    value="errors / attempts", scale=100, op=">=", threshold="critical_pick_error_pct", unit="%",
    zero_division="false",
)
run = tool(SPEC)
