"""obs_idle_spread: were at least {min_idle_stations} of the site's stations each idle >
{idle_pct_threshold}%?

Robotics conventions: `station_idle_pct` is one 5-minute gauge sample per station; the window
`[15m]` holds the samples in (t-15m, t]; a station with no samples (exporter down) is not
counted as idle. One query returns every station of the site. A spec: the count of stations
whose mean over the window is above the threshold; no station reporting at all is no_data
(the guard: the count of reporting stations).
"""

from sopgraph.tools.spec import Check, Keep, Measure, tool

SPEC = Check(
    measures={
        "idle": Measure(
            server="robotics", metric="station_idle_pct", minutes=15, reduce="mean",
            match={"site": "$site"}, keep=Keep(">", "idle_pct_threshold"), across="count",
        ),
        "stations": Measure(
            server="robotics", metric="station_idle_pct", minutes=15, reduce="mean",
            match={"site": "$site"}, across="count",
        ),
    },
    value="idle", op=">=", threshold="min_idle_stations", guard="stations", unit=" stations",
)
run = tool(SPEC)
