"""Tool for ct_sorter_jam_persistent: the sorter jammed in each of the last N 5-minute intervals.

N is `jam_persist_intervals`. `conveyance_5m.sorter_jam_events_total` is a cumulative counter
that resets (06:00 day start, controller restarts); an interval's jams are the counter's
step from the previous row, a step down being a reset that counts the new value. The last
interval is the latest row at or before the alarm.
"""

from __future__ import annotations

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import sql as kit_sql
from sopgraph.tools.kit import sql_time

STEP_MIN = 5


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    intervals = int(ctx.params["jam_persist_intervals"])
    ts = sql_time(timestamp)
    sql = f"""
        WITH w AS (
            SELECT five_minute_interval AS t, sorter_jam_events_total AS v,
                   lag(sorter_jam_events_total) OVER (ORDER BY five_minute_interval) AS prev
            FROM conveyance_5m
            WHERE site = ?
              AND five_minute_interval
                  > CAST(? AS TIMESTAMP) - INTERVAL {(intervals + 1) * STEP_MIN} MINUTE
              AND five_minute_interval <= CAST(? AS TIMESTAMP)
        )
        SELECT t, CASE WHEN v >= prev THEN v - prev ELSE v END
        FROM w
        WHERE t > CAST(? AS TIMESTAMP) - INTERVAL {intervals * STEP_MIN} MINUTE
          AND v IS NOT NULL AND prev IS NOT NULL
        ORDER BY t
    """
    rows = await kit_sql(ctx, "conveyance", sql, site, ts, ts, ts)
    jams = [r[1] for r in rows]
    if len(jams) < intervals:
        return Verdict(
            value="no_data",
            observed={"jams_per_interval": jams},
            threshold=intervals,
            explanation=(
                f"Only {len(jams)} of the last {intervals} five-minute intervals have "
                "sorter jam counts."
            ),
        )
    persistent = all(j > 0 for j in jams)
    return Verdict(
        value="true" if persistent else "false",
        observed={"jams_per_interval": jams},
        threshold=intervals,
        explanation=(
            f"Sorter jams in the last {intervals} five-minute intervals: {jams}; "
            f"{'jammed in every one' if persistent else 'not every interval jammed'}."
        ),
    )
