"""Tool for rc_belt_sensor_offline: a collector belt fill sensor stopped reporting in 15 min.

An offline sensor leaves its `conveyance_5m.belt_<quadrant>_fill_ratio` null while the
five-minute rows keep coming; any null in the rows stamped in (alarm - 15 min, alarm] marks
the quadrant's sensor as having stopped. No rows at all is no_data.
"""

from __future__ import annotations

import datetime as dt

from sopgraph.graphs.model import Verdict

WINDOW_MIN = 15
QUADRANTS = {  # quadrant -> column, as conveyance's collector_quadrants table maps them
    "NE": "belt_ne_fill_ratio",
    "NW": "belt_nw_fill_ratio",
    "SE": "belt_se_fill_ratio",
    "SW": "belt_sw_fill_ratio",
}


def _sql_time(timestamp: str) -> str:
    # The warehouse stores naive UTC times.
    t = dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    if t.tzinfo is not None:
        t = t.astimezone(dt.UTC).replace(tzinfo=None)
    return t.isoformat(sep=" ", timespec="seconds")


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    ts = _sql_time(timestamp)
    sql = f"""
        SELECT count(*), {", ".join(f"count({col})" for col in QUADRANTS.values())}
        FROM conveyance_5m
        WHERE site = '{site.replace("'", "''")}'
          AND five_minute_interval > TIMESTAMP '{ts}' - INTERVAL {WINDOW_MIN} MINUTE
          AND five_minute_interval <= TIMESTAMP '{ts}'
    """
    rows, *readings = (await ctx.mcp.call("conveyance", "execute_query", {"sql": sql}))["rows"][0]
    if not rows:
        return Verdict(
            value="no_data",
            threshold=0,
            explanation=f"The warehouse has no conveyance rows in the last {WINDOW_MIN} minutes.",
        )
    offline = [q for q, n in zip(QUADRANTS, readings, strict=True) if n < rows]
    return Verdict(
        value="true" if offline else "false",
        observed={"quadrants": offline},
        threshold=0,
        explanation=(
            f"Fill sensors with missing readings in the last {WINDOW_MIN} min: "
            f"{', '.join(offline)}."
            if offline
            else f"All four fill sensors reported every reading in the last {WINDOW_MIN} min."
        ),
    )
