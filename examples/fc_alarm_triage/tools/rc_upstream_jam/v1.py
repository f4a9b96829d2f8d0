"""Tool for rc_upstream_jam: at least `upstream_jam_min` upstream jams in the last 30 min.

`conveyance_5m.upstream_jam_events_total` is a cumulative counter that resets (to 0 at the
06:00 day start and on controller restarts). Jams in the window are its increase from the
last row at or before (alarm - 30 min) to the last row at or before the alarm, summed step
by step; a step that goes down is a reset, and counts the new value (Prometheus `increase`).
"""

from __future__ import annotations

import datetime as dt

from sopgraph.graphs.model import Verdict

WINDOW_MIN = 30
STEP_MIN = 5  # one row per five-minute interval: the baseline row is at most this much older


def _sql_time(timestamp: str) -> str:
    # The warehouse stores naive UTC times.
    t = dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    if t.tzinfo is not None:
        t = t.astimezone(dt.UTC).replace(tzinfo=None)
    return t.isoformat(sep=" ", timespec="seconds")


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    threshold = ctx.params["upstream_jam_min"]
    ts = _sql_time(timestamp)
    sql = f"""
        WITH w AS (
            SELECT five_minute_interval AS t, upstream_jam_events_total AS v,
                   lag(upstream_jam_events_total) OVER (ORDER BY five_minute_interval) AS prev
            FROM conveyance_5m
            WHERE site = '{site.replace("'", "''")}'
              AND five_minute_interval > TIMESTAMP '{ts}' - INTERVAL {WINDOW_MIN + STEP_MIN} MINUTE
              AND five_minute_interval <= TIMESTAMP '{ts}'
        )
        SELECT sum(CASE WHEN v >= prev THEN v - prev ELSE v END), count(*)
        FROM w
        WHERE t > TIMESTAMP '{ts}' - INTERVAL {WINDOW_MIN} MINUTE
          AND v IS NOT NULL AND prev IS NOT NULL
    """
    jams, steps = (await ctx.mcp.call("conveyance", "execute_query", {"sql": sql}))["rows"][0]
    if not steps:
        return Verdict(
            value="no_data",
            threshold=threshold,
            explanation=f"No upstream jam counter readings in the last {WINDOW_MIN} minutes.",
        )
    return Verdict(
        value="true" if jams >= threshold else "false",
        observed={"jams": jams},
        threshold=threshold,
        explanation=f"Upstream conveyance recorded {jams} jams in the last {WINDOW_MIN} minutes.",
    )
