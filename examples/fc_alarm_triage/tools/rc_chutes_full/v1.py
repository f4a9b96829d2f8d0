"""Tool for rc_chutes_full: at least `chutes_full_min` sorter chutes currently reported full.

"Currently" is the latest `conveyance_5m.sorter_chutes_full` reading at or before the
alarm; a reading older than the last 15 minutes is not current, so none is no_data.
"""

from __future__ import annotations

import datetime as dt

from sopgraph.graphs.model import Verdict

FRESH_MIN = 15


def _sql_time(timestamp: str) -> str:
    # The warehouse stores naive UTC times.
    t = dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    if t.tzinfo is not None:
        t = t.astimezone(dt.UTC).replace(tzinfo=None)
    return t.isoformat(sep=" ", timespec="seconds")


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    threshold = ctx.params["chutes_full_min"]
    ts = _sql_time(timestamp)
    sql = f"""
        SELECT five_minute_interval, sorter_chutes_full
        FROM conveyance_5m
        WHERE site = '{site.replace("'", "''")}'
          AND sorter_chutes_full IS NOT NULL
          AND five_minute_interval > TIMESTAMP '{ts}' - INTERVAL {FRESH_MIN} MINUTE
          AND five_minute_interval <= TIMESTAMP '{ts}'
        ORDER BY five_minute_interval DESC
        LIMIT 1
    """
    rows = (await ctx.mcp.call("conveyance", "execute_query", {"sql": sql}))["rows"]
    if not rows:
        return Verdict(
            value="no_data",
            threshold=threshold,
            explanation=f"No sorter chute reading in the {FRESH_MIN} minutes before the alarm.",
        )
    at, full = rows[0]
    return Verdict(
        value="true" if full >= threshold else "false",
        observed=full,
        threshold=threshold,
        explanation=f"{full} sorter chutes were reported full at {at}.",
    )
