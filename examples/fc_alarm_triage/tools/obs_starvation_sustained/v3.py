"""Tool for obs_starvation_sustained: every upstream reading of the last 45 min below plan.

`conveyance_5m.upstream_rate_ratio` is a fraction of plan; the window is the rows stamped in
(alarm - 45 min, alarm], null readings skipped. Fewer than `starvation_min_readings`
readings is too little to go on: no_data.

v3: `observed` is in percent, the SOP text's unit (v2 gave the fraction); the verdict
is decided exactly as in v2.
"""

from __future__ import annotations

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import sql as kit_sql
from sopgraph.tools.kit import sql_time

WINDOW_MIN = 45


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    threshold = ctx.params["upstream_flow_min_pct"]
    min_readings = ctx.params["starvation_min_readings"]
    ts = sql_time(timestamp)
    sql = f"""
        SELECT count(upstream_rate_ratio), max(upstream_rate_ratio)
        FROM conveyance_5m
        WHERE site = ?
          AND five_minute_interval > CAST(? AS TIMESTAMP) - INTERVAL {WINDOW_MIN} MINUTE
          AND five_minute_interval <= CAST(? AS TIMESTAMP)
    """
    readings, highest = (await kit_sql(ctx, "conveyance", sql, site, ts, ts))[0]
    if readings < min_readings:
        return Verdict(
            value="no_data",
            observed={"readings": readings},
            threshold=threshold,
            explanation=(
                f"Only {readings} upstream readings in the last {WINDOW_MIN} minutes; "
                f"at least {min_readings} are needed."
            ),
        )
    sustained = highest < threshold / 100
    return Verdict(
        value="true" if sustained else "false",
        observed={"readings": readings, "max_pct": round(highest * 100, 4)},
        threshold=threshold,
        explanation=(
            f"The highest of {readings} upstream readings in {WINDOW_MIN} min was "
            f"{highest:.1%} of plan, {'below' if sustained else 'not below'} {threshold}%."
        ),
    )
