"""obs_station_idle: was the alarmed station idle more than {idle_pct_threshold}% of the last 15
min? (a spec: the mean of `station_idle_pct` over (t-15m, t]; no samples is no_data)"""

from sopgraph.tools.spec import Check, Measure, tool

SPEC = Check(
    measures={
        "idle": Measure(
            server="robotics", metric="station_idle_pct", minutes=15, reduce="mean",
            match={"site": "$site", "station": "$station"},
        ),
    },
    value="idle", op=">", threshold="idle_pct_threshold", unit="%",
)
run = tool(SPEC)
