"""rc_sorter_jam: at least {sorter_jam_min} sorter jams in the last 30 min? (a spec:
`conveyance_5m.sorter_jam_events_total` is a cumulative counter that resets, to 0 at the 06:00
day start and on controller restarts; jams are its increase from the last row at or before
t-30m (a baseline row at most 5 min older) to the last row at or before t, summed step by step,
a step that goes down counting the new value (Prometheus `increase`); no counted row is no_data)"""

from sopgraph.tools.spec import Check, Measure, tool

SPEC = Check(
    measures={
        "jams": Measure(
            server="conveyance", table="conveyance_5m", column="sorter_jam_events_total",
            where={"site": "$site"}, time_column="five_minute_interval", minutes=30,
            edge="(]", reduce="increase", step_minutes=5,
        ),
    },
    value="jams", op=">=", threshold="sorter_jam_min", unit=" jams",
)
run = tool(SPEC)
