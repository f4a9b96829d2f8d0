"""rc_recirc_high: were more than {recirc_max_pct}% of packages recirculated over the last 15
min? (a spec: `conveyance_5m.recirc_ratio` is the recirculated fraction per five-minute row;
the mean over the site's rows stamped in (t-15m, t], null readings skipped, times 100 so
`observed` is in percent; no reading at all is no_data)"""

from sopgraph.tools.spec import Check, Measure, tool

SPEC = Check(
    measures={
        "recirc": Measure(
            server="conveyance", table="conveyance_5m", column="recirc_ratio",
            where={"site": "$site"}, time_column="five_minute_interval", minutes=15,
            edge="(]", reduce="mean",
        ),
    },
    value="recirc", scale=100, op=">", threshold="recirc_max_pct", unit="%",
)
run = tool(SPEC)
