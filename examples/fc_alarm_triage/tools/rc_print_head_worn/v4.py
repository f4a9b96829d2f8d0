"""rc_print_head_worn: was the station printer's print head last replaced more than
{print_head_max_days} days ago? (a spec: the station's printer is `stations.printer_id`, its
`maintenance_log` rows carry it as equipment_id; the age in days of its latest
component 'print_head', action 'replaced' row performed at or before the alarm (work logged
after it has not happened yet). A printer with no replacement on record has a head of unknown
age: the SOP's maintenance practice counts it as worn (true); a station not in the ops store is
no_data. Ops store times are UTC text 'YYYY-MM-DD HH:MM:SS'.)"""

from sopgraph.tools.spec import Check, Lookup, Measure, tool

SPEC = Check(
    lookups={
        "printer": Lookup(server="ops", table="stations", column="printer_id",
                          where={"site": "$site", "station": "$station"}),
    },
    measures={
        "age_days": Measure(
            server="ops", table="maintenance_log", reduce="age", age_unit="days",
            column="performed_at", time_column="performed_at", edge="(]",
            where={"site": "$site", "equipment_id": "$printer", "component": "print_head",
                   "action": "replaced"},
            missing="true",
        ),
    },
    value="age_days", op=">", threshold="print_head_max_days", unit=" days",
)
run = tool(SPEC)
