"""rc_robot_fault: is the alarmed station's robot in a fault state at the time of the alarm?
(a spec: the station's robot is `stations.robot_id`; an `equipment_states` row covers
[started_at, ended_at), ended_at NULL while the state lasts, and a robot is in one state at a
time (its rows do not overlap), so the count of its 'fault' rows open at t above 0 is true.
A robot with no state at t, or a station not in the ops store, is no_data; the verdict states
the state looked for, 'fault', as its threshold. Ops store times are UTC text
'YYYY-MM-DD HH:MM:SS'.)"""

from sopgraph.tools.spec import Check, Lookup, Measure, tool

AT_T = {"server": "ops", "table": "equipment_states", "reduce": "count",
        "open_at": ("started_at", "ended_at")}  # fmt: skip

SPEC = Check(
    lookups={
        "robot": Lookup(server="ops", table="stations", column="robot_id",
                        where={"site": "$site", "station": "$station"}),
    },
    measures={
        "faults": Measure(where={"site": "$site", "equipment_id": "$robot", "state": "fault"}, **AT_T),
        "states": Measure(where={"site": "$site", "equipment_id": "$robot"}, **AT_T),
    },
    guard="states", value="faults", op=">", threshold=0, verdict_threshold="fault",
)
run = tool(SPEC)
