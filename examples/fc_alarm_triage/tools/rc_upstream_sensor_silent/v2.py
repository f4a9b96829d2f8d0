"""Tool for rc_upstream_sensor_silent: no upstream reading for the last `sensor_silent_min` min.

A silent sensor leaves `conveyance_5m.upstream_rate_ratio` null while the five-minute rows
keep coming; the window is the rows stamped in (alarm - N min, alarm]. No rows at all means
the warehouse itself has nothing for the site then: no_data, not a silent sensor.
"""

from __future__ import annotations

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import sql as kit_sql
from sopgraph.tools.kit import sql_time


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    minutes = ctx.params["sensor_silent_min"]
    ts = sql_time(timestamp)
    sql = f"""
        SELECT count(*), count(upstream_rate_ratio)
        FROM conveyance_5m
        WHERE site = ?
          AND five_minute_interval > CAST(? AS TIMESTAMP) - INTERVAL {int(minutes)} MINUTE
          AND five_minute_interval <= CAST(? AS TIMESTAMP)
    """
    rows, readings = (await kit_sql(ctx, "conveyance", sql, site, ts, ts))[0]
    if not rows:
        return Verdict(
            value="no_data",
            threshold=0,
            explanation=f"The warehouse has no conveyance rows in the last {minutes} minutes.",
        )
    return Verdict(
        value="true" if readings == 0 else "false",
        observed={"readings": readings},
        threshold=0,
        explanation=(
            f"The upstream sensor reported {readings} of {rows} five-minute readings "
            f"in the last {minutes} minutes."
        ),
    )
