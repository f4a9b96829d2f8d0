"""rc_robot_telemetry_gap: has the station's robot reported no metrics in the last 15 minutes?

Robotics conventions: every robot exports all its gauges together every 5 minutes, so an
exporter outage removes every metric at once; `station_idle_pct` (the SOP's data hint) is always
exported while the exporter is up, so counting its samples in (t-15m, t] is enough. A spec: the
count of `station_idle_pct` samples over (t-15m, t] for the alarmed station (no series: 0
samples); a gap is exactly 0 samples ("no metrics at all" is the definition, not a tunable
threshold).
"""

from sopgraph.tools.spec import Check, Measure, tool

SPEC = Check(
    measures={
        "samples": Measure(
            server="robotics", metric="station_idle_pct", minutes=15, reduce="count",
            match={"site": "$site", "station": "$station"},
        ),
    },
    value="samples", op="==", threshold=0, unit=" samples",
)
run = tool(SPEC)
