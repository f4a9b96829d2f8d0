"""Tool for rc_belt_sensor_offline: a collector belt fill sensor stopped reporting in 15 min.

An offline sensor leaves its `conveyance_5m.belt_<quadrant>_fill_ratio` null while the
five-minute rows keep coming; any null in the rows stamped in (alarm - 15 min, alarm] marks
the quadrant's sensor as having stopped. No rows at all is no_data.
"""

from __future__ import annotations

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import sql as kit_sql
from sopgraph.tools.kit import sql_time

WINDOW_MIN = 15
QUADRANTS = {  # quadrant -> column, as conveyance's collector_quadrants table maps them
    "NE": "belt_ne_fill_ratio",
    "NW": "belt_nw_fill_ratio",
    "SE": "belt_se_fill_ratio",
    "SW": "belt_sw_fill_ratio",
}


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    ts = sql_time(timestamp)
    sql = f"""
        SELECT count(*), {", ".join(f"count({col})" for col in QUADRANTS.values())}
        FROM conveyance_5m
        WHERE site = ?
          AND five_minute_interval > CAST(? AS TIMESTAMP) - INTERVAL {WINDOW_MIN} MINUTE
          AND five_minute_interval <= CAST(? AS TIMESTAMP)
    """
    rows, *readings = (await kit_sql(ctx, "conveyance", sql, site, ts, ts))[0]
    if not rows:
        return Verdict(
            value="no_data",
            threshold=0,
            explanation=f"The warehouse has no conveyance rows in the last {WINDOW_MIN} minutes.",
        )
    offline = [q for q, n in zip(QUADRANTS, readings, strict=True) if n < rows]
    return Verdict(
        value="true" if offline else "false",
        observed={"quadrants": offline},
        threshold=0,
        explanation=(
            f"Fill sensors with missing readings in the last {WINDOW_MIN} min: "
            f"{', '.join(offline)}."
            if offline
            else f"All four fill sensors reported every reading in the last {WINDOW_MIN} min."
        ),
    )
