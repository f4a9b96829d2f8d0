"""ct_labor_pool_available: are at least {min_float_staff} float associates present this hour?
(a spec: `staffing` has one row per site, UTC hour and area, hour_start 'YYYY-MM-DD HH:00:00',
'float' is the labor pool; "this hour" is the hour the alarm falls in, the one row whose
hour_start is in (t - 60 min, t]; no row or a null present_headcount is no_data.)"""

from sopgraph.tools.spec import Check, Measure, tool

SPEC = Check(
    measures={
        "float_present": Measure(
            server="ops", table="staffing", column="present_headcount", reduce="last",
            where={"site": "$site", "area": "float"},
            time_column="hour_start", minutes=60, edge="(]",
        ),
    },
    value="float_present", op=">=", threshold="min_float_staff", unit=" associates",
)
run = tool(SPEC)
