"""ct_repeat_robot_faults: did the station's robot go into fault {repeat_fault_count}+ times in
the last 24 h? (a spec: the station's robot is `stations.robot_id`; each `equipment_states` row
is one entry into a state at started_at, so the robot's 'fault' rows with started_at in
(t - 24 h, t] are its faults in the window, 0 when there are none; a station not in the ops
store is no_data. Ops store times are UTC text 'YYYY-MM-DD HH:MM:SS'.)"""

from sopgraph.tools.spec import Check, Lookup, Measure, tool

SPEC = Check(
    lookups={
        "robot": Lookup(server="ops", table="stations", column="robot_id",
                        where={"site": "$site", "station": "$station"}),
    },
    measures={
        "faults": Measure(
            server="ops", table="equipment_states", reduce="count",
            where={"site": "$site", "equipment_id": "$robot", "state": "fault"},
            time_column="started_at", minutes=24 * 60, edge="(]",
        ),
    },
    value="faults", op=">=", threshold="repeat_fault_count", unit=" faults",
)
run = tool(SPEC)
