"""Tool for rc_sorter_throughput_low: sorter below `sorter_tput_min_pct`% of rated over 15 min.

`conveyance_5m.sorter_throughput_ratio` is a fraction of rated throughput per five-minute
row; the window is the rows stamped in (alarm - 15 min, alarm], null readings skipped.
"""

from __future__ import annotations

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import sql as kit_sql
from sopgraph.tools.kit import sql_time

WINDOW_MIN = 15


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    threshold = ctx.params["sorter_tput_min_pct"]
    ts = sql_time(timestamp)
    sql = f"""
        SELECT avg(sorter_throughput_ratio), count(sorter_throughput_ratio)
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
            explanation=f"No sorter throughput reading in the {WINDOW_MIN} minutes before the alarm.",
        )
    slow = mean < threshold / 100
    return Verdict(
        value="true" if slow else "false",
        observed=round(mean, 6),
        threshold=threshold,
        explanation=(
            f"The sorter averaged {mean:.1%} of rated throughput over {WINDOW_MIN} min, "
            f"{'below' if slow else 'not below'} {threshold}%."
        ),
    )
