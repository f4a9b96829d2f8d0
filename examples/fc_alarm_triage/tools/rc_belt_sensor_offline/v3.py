"""rc_belt_sensor_offline: did a collector belt fill sensor stop reporting in the last 15 min?
(a spec: an offline sensor leaves its `conveyance_5m.belt_<quadrant>_fill_ratio` null while the
five-minute rows keep coming; over the site's rows stamped in (t-15m, t], the readings the four
sensors missed (4 per row less the non-null ones) must be 0; any missed reading marks a sensor
as having stopped; no rows at all is no_data)"""

from sopgraph.tools.spec import Check, Measure, tool

WINDOW = dict(
    server="conveyance", table="conveyance_5m", where={"site": "$site"},
    time_column="five_minute_interval", minutes=15, edge="(]", reduce="count",
)
SPEC = Check(
    measures={
        "rows": Measure(**WINDOW),
        "readings": Measure(
            columns=("belt_nw_fill_ratio", "belt_ne_fill_ratio", "belt_sw_fill_ratio",
                     "belt_se_fill_ratio"),
            across="sum", **WINDOW,
        ),
    },
    guard="rows", value="4 * rows - readings", op=">", threshold=0, unit=" missed readings",
)
run = tool(SPEC)
