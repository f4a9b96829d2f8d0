"""Tool for obs_starvation_sustained: every upstream reading of the last 45 min below plan.

`conveyance_5m.upstream_rate_ratio` is a fraction of plan; the window is the rows stamped in
(alarm - 45 min, alarm], null readings skipped. Fewer than `starvation_min_readings`
readings is too little to go on: no_data.
"""

from __future__ import annotations

import datetime as dt

from sopgraph.graphs.model import Verdict

WINDOW_MIN = 45


def _sql_time(timestamp: str) -> str:
    # The warehouse stores naive UTC times.
    t = dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    if t.tzinfo is not None:
        t = t.astimezone(dt.UTC).replace(tzinfo=None)
    return t.isoformat(sep=" ", timespec="seconds")


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    threshold = ctx.params["upstream_flow_min_pct"]
    min_readings = ctx.params["starvation_min_readings"]
    ts = _sql_time(timestamp)
    sql = f"""
        SELECT count(upstream_rate_ratio), max(upstream_rate_ratio)
        FROM conveyance_5m
        WHERE site = '{site.replace("'", "''")}'
          AND five_minute_interval > TIMESTAMP '{ts}' - INTERVAL {WINDOW_MIN} MINUTE
          AND five_minute_interval <= TIMESTAMP '{ts}'
    """
    readings, highest = (await ctx.mcp.call("conveyance", "execute_query", {"sql": sql}))["rows"][0]
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
        observed={"readings": readings, "max_ratio": highest},
        threshold=threshold,
        explanation=(
            f"The highest of {readings} upstream readings in {WINDOW_MIN} min was "
            f"{highest:.1%} of plan, {'below' if sustained else 'not below'} {threshold}%."
        ),
    )
