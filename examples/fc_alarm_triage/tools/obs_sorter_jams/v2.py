"""Tool for obs_sorter_jams: at least `sorter_jam_alarm_min` sorter jams in the last 30 min.

`conveyance_5m.sorter_jam_events_total` is a cumulative counter that resets (to 0 at the
06:00 day start and on controller restarts). Jams in the window are its increase from the
last row at or before (alarm - 30 min) to the last row at or before the alarm, summed step
by step; a step that goes down is a reset, and counts the new value (Prometheus `increase`).
"""

from __future__ import annotations

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import sql as kit_sql
from sopgraph.tools.kit import sql_time

WINDOW_MIN = 30
STEP_MIN = 5  # one row per five-minute interval: the baseline row is at most this much older


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    threshold = ctx.params["sorter_jam_alarm_min"]
    ts = sql_time(timestamp)
    sql = f"""
        WITH w AS (
            SELECT five_minute_interval AS t, sorter_jam_events_total AS v,
                   lag(sorter_jam_events_total) OVER (ORDER BY five_minute_interval) AS prev
            FROM conveyance_5m
            WHERE site = ?
              AND five_minute_interval > CAST(? AS TIMESTAMP) - INTERVAL {WINDOW_MIN + STEP_MIN} MINUTE
              AND five_minute_interval <= CAST(? AS TIMESTAMP)
        )
        SELECT sum(CASE WHEN v >= prev THEN v - prev ELSE v END), count(*)
        FROM w
        WHERE t > CAST(? AS TIMESTAMP) - INTERVAL {WINDOW_MIN} MINUTE
          AND v IS NOT NULL AND prev IS NOT NULL
    """
    jams, steps = (await kit_sql(ctx, "conveyance", sql, site, ts, ts, ts))[0]
    if not steps:
        return Verdict(
            value="no_data",
            threshold=threshold,
            explanation=f"No sorter jam counter readings in the last {WINDOW_MIN} minutes.",
        )
    return Verdict(
        value="true" if jams >= threshold else "false",
        observed={"jams": jams},
        threshold=threshold,
        explanation=f"The sorter recorded {jams} jams in the last {WINDOW_MIN} minutes.",
    )
