"""Tool for obs_belt_imbalance: north and south belt halves differ by > `belt_imbalance_pct` pp.

Each quadrant's fill is the average of its `conveyance_5m.belt_<quadrant>_fill_ratio` over
the rows stamped in (alarm - 10 min, alarm], null readings skipped; a half's fill is the
mean of its quadrants that have one (north = NW, NE; south = SW, SE, as the SOP and the
collector_quadrants table say). A half with no reading is no_data.
"""

from __future__ import annotations

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import sql as kit_sql
from sopgraph.tools.kit import sql_time

WINDOW_MIN = 10
HALVES = {  # half -> its quadrants' fill columns
    "north": ("belt_nw_fill_ratio", "belt_ne_fill_ratio"),
    "south": ("belt_sw_fill_ratio", "belt_se_fill_ratio"),
}


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    threshold = ctx.params["belt_imbalance_pct"]
    ts = sql_time(timestamp)
    columns = [col for cols in HALVES.values() for col in cols]
    sql = f"""
        SELECT {", ".join(f"avg({col})" for col in columns)}
        FROM conveyance_5m
        WHERE site = ?
          AND five_minute_interval > CAST(? AS TIMESTAMP) - INTERVAL {WINDOW_MIN} MINUTE
          AND five_minute_interval <= CAST(? AS TIMESTAMP)
    """
    row = (await kit_sql(ctx, "conveyance", sql, site, ts, ts))[0]
    fill = dict(zip(columns, row, strict=True))
    halves: dict[str, float] = {}
    for half, cols in HALVES.items():
        known = [fill[c] for c in cols if fill[c] is not None]
        if not known:
            return Verdict(
                value="no_data",
                threshold=threshold,
                explanation=f"No {half} belt fill reading in the last {WINDOW_MIN} minutes.",
            )
        halves[half] = sum(known) / len(known) * 100
    gap = abs(halves["north"] - halves["south"])
    return Verdict(
        value="true" if gap > threshold else "false",
        observed=round(gap, 4),
        threshold=threshold,
        explanation=(
            f"North {halves['north']:.1f}% vs south {halves['south']:.1f}% full over "
            f"{WINDOW_MIN} min: {gap:.1f} points apart."
        ),
    )
