"""obs_camera_fail_high: did the station's camera fail more than {camera_alarm_pct}% of its
reads over the last 15 min?

Robotics conventions: `camera_read_fail_pct` is one gauge sample per station every 5 minutes
(share of reads that failed, 0-100), averaged as equal 5-minute intervals; a station whose
exporter is down has no samples. A spec: the mean of `camera_read_fail_pct` over (t-15m, t] for
the alarmed station; no samples is no_data.
"""

from sopgraph.tools.spec import Check, Measure, tool

SPEC = Check(
    measures={
        "fail": Measure(
            server="robotics", metric="camera_read_fail_pct", minutes=15, reduce="mean",
            match={"site": "$site", "station": "$station"},
        ),
    },
    value="fail", op=">", threshold="camera_alarm_pct", unit="%",
)
run = tool(SPEC)
