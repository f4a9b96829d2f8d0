"""Tool for rc_upstream_blockage: upstream feed below `upstream_block_pct`% of plan over 15 min.

`conveyance_5m.upstream_rate_ratio` is a fraction of plan (1.0 = on plan) per five-minute
row; the window is the rows stamped in (alarm - 15 min, alarm]. Null readings (sensor
silent) are skipped; no reading at all is no_data.
"""

from __future__ import annotations

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import sql as kit_sql
from sopgraph.tools.kit import sql_time

WINDOW_MIN = 15


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    threshold = ctx.params["upstream_block_pct"]
    ts = sql_time(timestamp)
    sql = f"""
        SELECT avg(upstream_rate_ratio), count(upstream_rate_ratio)
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
            explanation=f"No upstream rate reading in the {WINDOW_MIN} minutes before the alarm.",
        )
    blocked = mean < threshold / 100
    return Verdict(
        value="true" if blocked else "false",
        observed=round(mean, 6),
        threshold=threshold,
        explanation=(
            f"Upstream feed averaged {mean:.1%} of plan over {WINDOW_MIN} min "
            f"({readings} readings), {'below' if blocked else 'not below'} {threshold}%."
        ),
    )
