"""Tool for rc_recirc_high: more than `recirc_max_pct`% of packages recirculated over 15 min.

`conveyance_5m.recirc_ratio` is the recirculated fraction per five-minute row; the window is
the rows stamped in (alarm - 15 min, alarm], null readings skipped.
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
    threshold = ctx.params["recirc_max_pct"]
    ts = _sql_time(timestamp)
    sql = f"""
        SELECT avg(recirc_ratio), count(recirc_ratio)
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
