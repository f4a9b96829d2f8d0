"""Tool for obs_belt_fill_high: some collector quadrant averaged above `belt_fill_high_pct`% full.

`conveyance_5m.belt_<quadrant>_fill_ratio` is a fill fraction per five-minute row; each
quadrant's average is over the rows stamped in (alarm - 10 min, alarm], null readings (an
offline sensor) skipped. A quadrant with no reading is left out; all four without one is
no_data.

v3: `observed` is in percent, the SOP text's unit (v2 gave the fraction); the verdict
is decided exactly as in v2.
"""

from __future__ import annotations

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
    threshold = ctx.params["belt_fill_high_pct"]
    ts = sql_time(timestamp)
    sql = f"""
        SELECT {", ".join(f"avg({col})" for col in QUADRANTS.values())}
        FROM conveyance_5m
        WHERE site = ?
          AND five_minute_interval > CAST(? AS TIMESTAMP) - INTERVAL {WINDOW_MIN} MINUTE
          AND five_minute_interval <= CAST(? AS TIMESTAMP)
    """
    row = (await kit_sql(ctx, "conveyance", sql, site, ts, ts))[0]
    fills = {q: v for q, v in zip(QUADRANTS, row, strict=True) if v is not None}
    if not fills:
        return Verdict(
            value="no_data",
            threshold=threshold,
            explanation=f"No collector belt fill reading in the last {WINDOW_MIN} minutes.",
        )
    high = [q for q, fill in fills.items() if fill > threshold / 100]
    return Verdict(
        value="true" if high else "false",
        observed={"fill_pct": {q: round(v * 100, 4) for q, v in fills.items()}, "high": high},
        threshold=threshold,
        explanation=(
            f"Quadrants above {threshold}% full over {WINDOW_MIN} min: {', '.join(high)}."
            if high
            else f"No quadrant averaged above {threshold}% full over {WINDOW_MIN} min."
        ),
    )
