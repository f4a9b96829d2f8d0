"""ct_cup_recently_replaced: was the robot's suction cup replaced within the last
{cup_replaced_days} days? (a spec: the station's robot is `stations.robot_id`, its
`maintenance_log` rows carry it as equipment_id; the age in days of its latest
component 'suction_cup', action 'replaced' row performed at or before the alarm (work logged
after it has not happened yet); no replacement on record means not recently (false), a station
not in the ops store is no_data. Ops store times are UTC text 'YYYY-MM-DD HH:MM:SS'.)"""

from sopgraph.tools.spec import Check, Lookup, Measure, tool

SPEC = Check(
    lookups={
        "robot": Lookup(server="ops", table="stations", column="robot_id",
                        where={"site": "$site", "station": "$station"}),
    },
    measures={
        "age_days": Measure(
            server="ops", table="maintenance_log", reduce="age", age_unit="days",
            column="performed_at", time_column="performed_at", edge="(]",
            where={"site": "$site", "equipment_id": "$robot", "component": "suction_cup",
                   "action": "replaced"},
            missing="false",
        ),
    },
    value="age_days", op="<=", threshold="cup_replaced_days", unit=" days",
)
run = tool(SPEC)
