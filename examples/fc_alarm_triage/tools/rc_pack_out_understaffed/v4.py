"""rc_pack_out_understaffed: is pack-out headcount this hour below {staffing_min_pct}% of plan?
(a spec: `staffing` has one row per site, UTC hour and area, hour_start 'YYYY-MM-DD HH:00:00';
"this hour" is the hour the alarm falls in, the one row whose hour_start is in (t - 60 min, t];
`observed` is the headcount present as a percent of the planned headcount, the SOP's unit
(100 * present is divided last, so 8 of 10 is exactly 80); no row or a null headcount is
no_data, a plan of 0 is not understaffed.)"""

from sopgraph.tools.spec import Check, Measure, tool

HOUR = {"where": {"site": "$site", "area": "pack_out"}, "time_column": "hour_start",
        "minutes": 60, "edge": "(]", "reduce": "last"}  # fmt: skip

SPEC = Check(
    measures={
        "present": Measure(server="ops", table="staffing", column="present_headcount", **HOUR),
        "planned": Measure(server="ops", table="staffing", column="planned_headcount", **HOUR),
    },
    value="100 * present / planned", op="<", threshold="staffing_min_pct", unit="%",
    zero_division="false",
)
run = tool(SPEC)
