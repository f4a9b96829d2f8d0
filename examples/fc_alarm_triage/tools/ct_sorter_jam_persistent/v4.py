"""ct_sorter_jam_persistent: did the sorter jam in each of the last {jam_persist_intervals}
five-minute intervals? (a spec: `conveyance_5m.sorter_jam_events_total` is a cumulative counter
that resets, at the 06:00 day start and on controller restarts; an interval's jams are its step
from the previous row, a step down being a reset that counts the new value; over the site's
rows stamped in (t - 5*N min, t], each with the row before it as baseline, the number of
intervals whose step is above 0 must reach N; fewer than N steps is no_data)"""

from sopgraph.tools.spec import Check, Measure, tool

SPEC = Check(
    measures={
        "jammed": Measure(
            server="conveyance", table="conveyance_5m", column="sorter_jam_events_total",
            where={"site": "$site"}, time_column="five_minute_interval",
            minutes="5 * jam_persist_intervals", edge="(]", reduce="rises", step_minutes=5,
            min_count="jam_persist_intervals",
        ),
    },
    value="jammed", op=">=", threshold="jam_persist_intervals", unit=" intervals",
)
run = tool(SPEC)
