"""rc_suction_cup_worn: did the robot's suction vacuum average below {suction_vacuum_min_kpa}
kPa over the last 30 min?

Robotics conventions: `suction_vacuum_kpa` is one gauge sample per station every 5 minutes (mean
kPa over the interval), averaged as equal 5-minute intervals; a station whose exporter is down
has no samples. A spec: the mean of `suction_vacuum_kpa` over (t-30m, t] for the alarmed
station; no samples is no_data.
"""

from sopgraph.tools.spec import Check, Measure, tool

SPEC = Check(
    measures={
        "vacuum": Measure(
            server="robotics", metric="suction_vacuum_kpa", minutes=30, reduce="mean",
            match={"site": "$site", "station": "$station"},
        ),
    },
    value="vacuum", op="<", threshold="suction_vacuum_min_kpa", unit=" kPa",
)
run = tool(SPEC)
