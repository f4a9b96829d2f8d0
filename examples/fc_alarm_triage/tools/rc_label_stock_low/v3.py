"""rc_label_stock_low: is the station's latest label stock reading below {label_stock_min_pct}%?

Robotics conventions: `label_stock_pct` is the roll remaining at the end of each 5-minute
interval (0-100). The latest reading is the last sample in (t-15m, t]: a reading older than that
belongs to an exporter outage (the SOP's 15-minute telemetry horizon), so it is no data rather
than trusted as current. A spec: the last of `label_stock_pct` over (t-15m, t] for the alarmed
station; no samples is no_data.
"""

from sopgraph.tools.spec import Check, Measure, tool

SPEC = Check(
    measures={
        "stock": Measure(
            server="robotics", metric="label_stock_pct", minutes=15, reduce="last",
            match={"site": "$site", "station": "$station"},
        ),
    },
    value="stock", op="<", threshold="label_stock_min_pct", unit="%",
)
run = tool(SPEC)
