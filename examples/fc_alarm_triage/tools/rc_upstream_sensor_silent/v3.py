"""rc_upstream_sensor_silent: has the upstream flow sensor reported nothing for the last
{sensor_silent_min} minutes? (a spec: a silent sensor leaves `conveyance_5m.upstream_rate_ratio`
null while the five-minute rows keep coming; over the site's rows stamped in
(t-sensor_silent_min, t], silent is no non-null reading; no rows at all means the warehouse
has nothing for the site then: no_data, not a silent sensor)"""

from sopgraph.tools.spec import Check, Measure, tool

WINDOW = dict(
    server="conveyance", table="conveyance_5m", where={"site": "$site"},
    time_column="five_minute_interval", minutes="sensor_silent_min", edge="(]", reduce="count",
)
SPEC = Check(
    measures={
        "rows": Measure(**WINDOW),
        "readings": Measure(column="upstream_rate_ratio", **WINDOW),
    },
    guard="rows", value="readings", op="==", threshold=0, unit=" readings",
)
run = tool(SPEC)
