"""obs_starvation_sustained: was every upstream reading of the last 45 min below
{upstream_flow_min_pct}% of plan, with at least {starvation_min_readings} readings to go on? (a
spec: `conveyance_5m.upstream_rate_ratio` is a fraction of plan; the highest reading of the
site's rows stamped in (t-45m, t], null readings skipped, times 100 so `observed` is in
percent; fewer than starvation_min_readings readings is too little to go on: no_data)"""

from sopgraph.tools.spec import Check, Measure, tool

SPEC = Check(
    measures={
        "highest": Measure(
            server="conveyance", table="conveyance_5m", column="upstream_rate_ratio",
            where={"site": "$site"}, time_column="five_minute_interval", minutes=45,
            edge="(]", reduce="max", min_count="starvation_min_readings",
        ),
    },
    value="highest", scale=100, op="<", threshold="upstream_flow_min_pct", unit="%",
)
run = tool(SPEC)
