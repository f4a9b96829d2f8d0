"""obs_belt_fill_high: did some collector quadrant average above {belt_fill_high_pct}% full over
the last 10 min? (a spec: `conveyance_5m.belt_<quadrant>_fill_ratio` is a fill fraction per
five-minute row; each quadrant's mean over the site's rows stamped in (t-10m, t], null readings
(an offline sensor) skipped, a quadrant with no reading left out; the fullest quadrant, times
100 so `observed` is in percent; all four without a reading is no_data)"""

from sopgraph.tools.spec import Check, Measure, tool

SPEC = Check(
    measures={
        "fullest": Measure(
            server="conveyance", table="conveyance_5m",
            columns=("belt_nw_fill_ratio", "belt_ne_fill_ratio", "belt_sw_fill_ratio",
                     "belt_se_fill_ratio"),
            where={"site": "$site"}, time_column="five_minute_interval", minutes=10,
            edge="(]", reduce="mean", across="max",
        ),
    },
    value="fullest", scale=100, op=">", threshold="belt_fill_high_pct", unit="%",
)
run = tool(SPEC)
