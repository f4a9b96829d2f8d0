"""rc_chutes_full: are at least {chutes_full_min} sorter chutes currently reported full? (a
spec: "currently" is the latest non-null `conveyance_5m.sorter_chutes_full` reading of the
site stamped in (t-15m, t]; a reading older than that is not current, so none is no_data)"""

from sopgraph.tools.spec import Check, Measure, tool

SPEC = Check(
    measures={
        "full": Measure(
            server="conveyance", table="conveyance_5m", column="sorter_chutes_full",
            where={"site": "$site"}, time_column="five_minute_interval", minutes=15,
            edge="(]", reduce="last",
        ),
    },
    value="full", op=">=", threshold="chutes_full_min", unit=" chutes",
)
run = tool(SPEC)
