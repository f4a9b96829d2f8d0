"""rc_upstream_blockage: is upstream conveyance blocked, its feed averaging below
{upstream_block_pct}% of plan over the last 15 min? (a spec: `conveyance_5m.upstream_rate_ratio`
is a fraction of plan, 1.0 = on plan, per five-minute row; the mean over the site's rows
stamped in (t-15m, t], null readings (sensor silent) skipped, times 100 so `observed` is in
percent; no reading at all is no_data)"""

from sopgraph.tools.spec import Check, Measure, tool

SPEC = Check(
    measures={
        "feed": Measure(
            server="conveyance", table="conveyance_5m", column="upstream_rate_ratio",
            where={"site": "$site"}, time_column="five_minute_interval", minutes=15,
            edge="(]", reduce="mean",
        ),
    },
    value="feed", scale=100, op="<", threshold="upstream_block_pct", unit="%",
)
run = tool(SPEC)
