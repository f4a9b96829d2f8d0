"""Tool for rc_recirc_high: more than `recirc_max_pct`% of packages recirculated over 15 min.

`conveyance_5m.recirc_ratio` is the recirculated fraction per five-minute row; the window is
the rows stamped in (alarm - 15 min, alarm], null readings skipped.
"""

from __future__ import annotations

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import sql as kit_sql
from sopgraph.tools.kit import sql_time

WINDOW_MIN = 15


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    threshold = ctx.params["recirc_max_pct"]
    ts = sql_time(timestamp)
    sql = f"""
        SELECT avg(recirc_ratio), count(recirc_ratio)
        FROM conveyance_5m
        WHERE site = ?
          AND five_minute_interval > CAST(? AS TIMESTAMP) - INTERVAL {WINDOW_MIN} MINUTE
          AND five_minute_interval <= CAST(? AS TIMESTAMP)
    """
    mean, readings = (await kit_sql(ctx, "conveyance", sql, site, ts, ts))[0]
    if not readings:
        return Verdict(
            value="no_data",
            threshold=threshold,
            explanation=f"No recirculation reading in the {WINDOW_MIN} minutes before the alarm.",
        )
    high = mean > threshold / 100
    return Verdict(
        value="true" if high else "false",
        observed=round(mean, 6),
        threshold=threshold,
        explanation=(
            f"{mean:.1%} of packages recirculated over {WINDOW_MIN} min, "
            f"{'above' if high else 'not above'} {threshold}%."
        ),
    )
