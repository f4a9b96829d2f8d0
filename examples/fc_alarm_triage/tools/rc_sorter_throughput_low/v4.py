"""rc_sorter_throughput_low: did the sorter average below {sorter_tput_min_pct}% of its rated
throughput over the last 15 min? (a spec: `conveyance_5m.sorter_throughput_ratio` is a fraction
of rated throughput per five-minute row; the mean over the site's rows stamped in (t-15m, t],
null readings skipped, times 100 so `observed` is in percent; no reading at all is no_data)"""

from sopgraph.tools.spec import Check, Measure, tool

SPEC = Check(
    measures={
        "throughput": Measure(
            server="conveyance", table="conveyance_5m", column="sorter_throughput_ratio",
            where={"site": "$site"}, time_column="five_minute_interval", minutes=15,
            edge="(]", reduce="mean",
        ),
    },
    value="throughput", scale=100, op="<", threshold="sorter_tput_min_pct", unit="%",
)
run = tool(SPEC)
