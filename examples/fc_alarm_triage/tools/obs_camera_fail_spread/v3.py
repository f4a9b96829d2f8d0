"""obs_camera_fail_spread: did at least {camera_spread_min} stations each fail >
{camera_alarm_pct}% of camera reads over 15 min?

Robotics conventions: `camera_read_fail_pct` is one 5-minute gauge sample per station (0-100);
the window `[15m]` holds the samples in (t-15m, t]; a station with no samples (exporter down) is
not counted. One query returns every station of the site. A spec: the count of stations whose
mean over the window is above the threshold; no station reporting at all is no_data (the guard:
the count of reporting stations).
"""

from sopgraph.tools.spec import Check, Keep, Measure, tool

SPEC = Check(
    measures={
        "failing": Measure(
            server="robotics", metric="camera_read_fail_pct", minutes=15, reduce="mean",
            match={"site": "$site"}, keep=Keep(">", "camera_alarm_pct"), across="count",
        ),
        "stations": Measure(
            server="robotics", metric="camera_read_fail_pct", minutes=15, reduce="mean",
            match={"site": "$site"}, across="count",
        ),
    },
    value="failing", op=">=", threshold="camera_spread_min", guard="stations", unit=" stations",
)
run = tool(SPEC)
