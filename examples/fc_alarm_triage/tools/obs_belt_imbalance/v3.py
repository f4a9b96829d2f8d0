"""obs_belt_imbalance: do the north and south belt halves differ by more than
{belt_imbalance_pct} percentage points? (a spec: each quadrant's fill is the mean of its
`conveyance_5m.belt_<quadrant>_fill_ratio` over the site's rows stamped in (t-10m, t], null
readings skipped; a half's fill is the mean of its quadrants that have one (north = NW, NE;
south = SW, SE, as the SOP and conveyance's collector_quadrants table say), in percent; the
gap is the absolute difference; a half with no reading is no_data)"""

from sopgraph.tools.spec import Check, Measure, tool

WINDOW = dict(
    server="conveyance", table="conveyance_5m", where={"site": "$site"},
    time_column="five_minute_interval", minutes=10, edge="(]", reduce="mean", across="mean",
)
SPEC = Check(
    measures={
        "north": Measure(columns=("belt_nw_fill_ratio", "belt_ne_fill_ratio"), **WINDOW),
        "south": Measure(columns=("belt_sw_fill_ratio", "belt_se_fill_ratio"), **WINDOW),
    },
    value="abs(100 * north - 100 * south)", op=">", threshold="belt_imbalance_pct",
    unit=" points",
)
run = tool(SPEC)
