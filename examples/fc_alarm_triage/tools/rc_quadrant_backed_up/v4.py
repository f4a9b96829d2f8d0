"""rc_quadrant_backed_up: did the station's collector belt quadrant average above
{quadrant_full_pct}% full over the last 10 min? (a spec: the station's quadrant comes from ops
`stations`, its fill column from conveyance's `collector_quadrants`; the fill is the mean of that
`conveyance_5m.belt_<quadrant>_fill_ratio` over the site's rows stamped in (t-10m, t], null
readings skipped, times 100 so `observed` is in percent; a station with no known quadrant, or
no reading, is no_data)"""

from sopgraph.tools.spec import Check, Lookup, Measure, tool

SPEC = Check(
    lookups={
        "quadrant": Lookup(server="ops", table="stations", column="quadrant",
                           where={"site": "$site", "station": "$station"}),
        "fill_column": Lookup(server="conveyance", table="collector_quadrants",
                              column="fill_column", where={"quadrant": "$quadrant"}),
    },
    measures={
        "fill": Measure(
            server="conveyance", table="conveyance_5m", column="$fill_column",
            where={"site": "$site"}, time_column="five_minute_interval", minutes=10,
            edge="(]", reduce="mean",
        ),
    },
    value="fill", scale=100, op=">", threshold="quadrant_full_pct", unit="%",
)
run = tool(SPEC)
