"""Tool for rc_upstream_blockage: upstream feed below `upstream_block_pct`% of plan over 15 min.

`conveyance_5m.upstream_rate_ratio` is a fraction of plan (1.0 = on plan) per five-minute
row; the window is the rows stamped in (alarm - 15 min, alarm]. Null readings (sensor
silent) are skipped; no reading at all is no_data.
"""

from __future__ import annotations

import datetime as dt

from sopgraph.graphs.model import Verdict

WINDOW_MIN = 15


def _sql_time(timestamp: str) -> str:
    # The warehouse stores naive UTC times.
    t = dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    if t.tzinfo is not None:
        t = t.astimezone(dt.UTC).replace(tzinfo=None)
    return t.isoformat(sep=" ", timespec="seconds")


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    threshold = ctx.params["upstream_block_pct"]
    ts = _sql_time(timestamp)
    sql = f"""
        SELECT avg(upstream_rate_ratio), count(upstream_rate_ratio)
        FROM conveyance_5m
        WHERE site = '{site.replace("'", "''")}'
          AND five_minute_interval > TIMESTAMP '{ts}' - INTERVAL {WINDOW_MIN} MINUTE
          AND five_minute_interval <= TIMESTAMP '{ts}'
    """
    mean, readings = (await ctx.mcp.call("conveyance", "execute_query", {"sql": sql}))["rows"][0]
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
