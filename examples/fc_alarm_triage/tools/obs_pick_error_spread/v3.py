"""obs_pick_error_spread: do at least {pick_spread_min} stations each have a 30-min pick error
rate above {pick_error_pct_threshold}%?

Robotics conventions: `pick_errors` and `pick_attempts` are per-5-minute counts, so a station's
rate is sum(errors) / sum(attempts) over (t-30m, t]; a station with no samples or no attempts
has no error rate and is not counted (errors absent with attempts: 0 errors). A spec: per
station, sum_over_time(pick_errors) per sum_over_time(pick_attempts) in percent, counted where
above the threshold; no station reporting attempts at all is no_data (the guard: the count of
stations with attempt samples).
"""

from sopgraph.tools.spec import Check, Keep, Measure, tool

SPEC = Check(
    measures={
        "erring": Measure(
            server="robotics", metric="pick_errors", per="pick_attempts", scale=100,
            minutes=30, reduce="sum", match={"site": "$site"},
            keep=Keep(">", "pick_error_pct_threshold"), across="count",
        ),
        "stations": Measure(
            server="robotics", metric="pick_attempts", minutes=30, reduce="sum",
            match={"site": "$site"}, across="count",
        ),
    },
    value="erring", op=">=", threshold="pick_spread_min", guard="stations", unit=" stations",
)
run = tool(SPEC)
