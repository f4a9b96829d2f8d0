"""Tool for rc_upstream_sensor_silent: no upstream reading for the last `sensor_silent_min` min.

A silent sensor leaves `conveyance_5m.upstream_rate_ratio` null while the five-minute rows
keep coming; the window is the rows stamped in (alarm - N min, alarm]. No rows at all means
the warehouse itself has nothing for the site then: no_data, not a silent sensor.
"""

from __future__ import annotations

import datetime as dt

from sopgraph.graphs.model import Verdict


def _sql_time(timestamp: str) -> str:
    # The warehouse stores naive UTC times.
    t = dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    if t.tzinfo is not None:
        t = t.astimezone(dt.UTC).replace(tzinfo=None)
    return t.isoformat(sep=" ", timespec="seconds")


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    minutes = ctx.params["sensor_silent_min"]
    ts = _sql_time(timestamp)
    sql = f"""
        SELECT count(*), count(upstream_rate_ratio)
        FROM conveyance_5m
        WHERE site = '{site.replace("'", "''")}'
          AND five_minute_interval > TIMESTAMP '{ts}' - INTERVAL {int(minutes)} MINUTE
          AND five_minute_interval <= TIMESTAMP '{ts}'
    """
    rows, readings = (await ctx.mcp.call("conveyance", "execute_query", {"sql": sql}))["rows"][0]
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
