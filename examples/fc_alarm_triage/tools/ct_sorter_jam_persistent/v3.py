"""Tool for ct_sorter_jam_persistent: the sorter jammed in each of the last N 5-minute intervals.

N is `jam_persist_intervals`. `conveyance_5m.sorter_jam_events_total` is a cumulative counter
that resets (06:00 day start, controller restarts); an interval's jams are the counter's
step from the previous row, a step down being a reset that counts the new value. The last
interval is the latest row at or before the alarm.

v3: the rows come back with a plain SELECT and the kit's `counter_steps` takes the steps (v2
did it with a `lag()` window in SQL, which costs DuckDB about twice the time); the verdict,
the observed jams and the explanation are exactly v2's.
"""

from __future__ import annotations

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import counter_steps, sql_time
from sopgraph.tools.kit import sql as kit_sql

STEP_MIN = 5


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    intervals = int(ctx.params["jam_persist_intervals"])
    ts = sql_time(timestamp)
    sql = f"""
        SELECT five_minute_interval > CAST(? AS TIMESTAMP) - INTERVAL {intervals * STEP_MIN} MINUTE,
               sorter_jam_events_total
        FROM conveyance_5m
        WHERE site = ?
          AND five_minute_interval
              > CAST(? AS TIMESTAMP) - INTERVAL {(intervals + 1) * STEP_MIN} MINUTE
          AND five_minute_interval <= CAST(? AS TIMESTAMP)
        ORDER BY five_minute_interval
    """
    jams = counter_steps(await kit_sql(ctx, "conveyance", sql, ts, site, ts, ts))
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
