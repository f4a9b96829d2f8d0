"""Tool for rc_quadrant_backed_up: the station's belt quadrant averaged > `quadrant_full_pct`% full.

The station's quadrant comes from ops `stations`; its fill is the average of the matching
`conveyance_5m.belt_<quadrant>_fill_ratio` over the rows stamped in (alarm - 10 min, alarm],
null readings skipped. Both stores are asked at once (they cannot be joined), the four
quadrants' fills in one row so the second query does not wait on the first.
"""

from __future__ import annotations

import asyncio

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import sql as kit_sql
from sopgraph.tools.kit import sql_time

WINDOW_MIN = 10
QUADRANTS = {  # quadrant -> column, as conveyance's collector_quadrants table maps them
    "NW": "belt_nw_fill_ratio",
    "NE": "belt_ne_fill_ratio",
    "SW": "belt_sw_fill_ratio",
    "SE": "belt_se_fill_ratio",
}


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    threshold = ctx.params["quadrant_full_pct"]
    station = input.get("station")
    if not station:
        return Verdict(
            value="no_data",
            threshold=threshold,
            explanation="The alarm names no station, so its quadrant is unknown.",
        )
    ts = sql_time(timestamp)
    station_sql = """
        SELECT quadrant FROM stations
        WHERE site = ? AND station = ?
    """
    fill_sql = f"""
        SELECT {", ".join(f"avg({col})" for col in QUADRANTS.values())}
        FROM conveyance_5m
        WHERE site = ?
          AND five_minute_interval > CAST(? AS TIMESTAMP) - INTERVAL {WINDOW_MIN} MINUTE
          AND five_minute_interval <= CAST(? AS TIMESTAMP)
    """
    stations, fills = await asyncio.gather(
        kit_sql(ctx, "ops", station_sql, site, str(station)),
        kit_sql(ctx, "conveyance", fill_sql, site, ts, ts),
    )
    if not stations or stations[0][0] not in QUADRANTS:
        return Verdict(
            value="no_data",
            threshold=threshold,
            explanation=f"Station {station} of {site} has no collector quadrant in ops stations.",
        )
    quadrant = stations[0][0]
    fill = dict(zip(QUADRANTS, fills[0], strict=True))[quadrant]
    if fill is None:
        return Verdict(
            value="no_data",
            observed={"quadrant": quadrant, "fill": None},
            threshold=threshold,
            explanation=f"No {quadrant} quadrant fill reading in the last {WINDOW_MIN} minutes.",
        )
    full = fill > threshold / 100
    return Verdict(
        value="true" if full else "false",
        observed={"quadrant": quadrant, "fill": round(fill, 6)},
        threshold=threshold,
        explanation=(
            f"Quadrant {quadrant} (station {station}) averaged {fill:.1%} full over "
            f"{WINDOW_MIN} min, {'above' if full else 'not above'} {threshold}%."
        ),
    )
