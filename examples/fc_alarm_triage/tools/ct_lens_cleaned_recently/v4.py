"""ct_lens_cleaned_recently: was the station's camera lens cleaned within the last
{lens_clean_hours} hours? (a spec: the station's robot is `stations.robot_id`, its
`maintenance_log` rows carry it as equipment_id; the age in hours of its latest
component 'camera_lens', action 'cleaned' row performed at or before the alarm (work logged
after it has not happened yet); no cleaning on record means not recently (false), a station
not in the ops store is no_data. Ops store times are UTC text 'YYYY-MM-DD HH:MM:SS'.)"""

from sopgraph.tools.spec import Check, Lookup, Measure, tool

SPEC = Check(
    lookups={
        "robot": Lookup(server="ops", table="stations", column="robot_id",
                        where={"site": "$site", "station": "$station"}),
    },
    measures={
        "age_hours": Measure(
            server="ops", table="maintenance_log", reduce="age", age_unit="hours",
            column="performed_at", time_column="performed_at", edge="(]",
            where={"site": "$site", "equipment_id": "$robot", "component": "camera_lens",
                   "action": "cleaned"},
            missing="false",
        ),
    },
    value="age_hours", op="<=", threshold="lens_clean_hours", unit=" hours",
)
run = tool(SPEC)
