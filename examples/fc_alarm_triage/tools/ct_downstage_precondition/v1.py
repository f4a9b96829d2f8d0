"""Tool for ct_downstage_precondition: the collector belt is empty enough to downstage.

Per the SOP: each quadrant's fill is the average of its readings in the 5 minutes up to
and including its most recent reading, counting only readings of the last 10 minutes
(rows stamped in (alarm - 10 min, alarm], nulls skipped); a half is the mean of its two
quadrants (halves from conveyance's collector_quadrants table). A quadrant with no reading
leaves the check undecidable: no_data.
"""

from __future__ import annotations

import datetime as dt

from sopgraph.graphs.model import Verdict

RECENT_MIN = 10
AVERAGE_MIN = 5


def _sql_time(timestamp: str) -> str:
    # The warehouse stores naive UTC times.
    t = dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    if t.tzinfo is not None:
        t = t.astimezone(dt.UTC).replace(tzinfo=None)
    return t.isoformat(sep=" ", timespec="seconds")


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    limits = {
        "north": ctx.params["downstage_north_max_pct"],
        "south": ctx.params["downstage_south_max_pct"],
    }
    ts = _sql_time(timestamp)
    # UNPIVOT drops null readings, so each quadrant's latest row is its latest reading.
    sql = f"""
        WITH recent AS (
            SELECT five_minute_interval AS t,
                   belt_nw_fill_ratio, belt_ne_fill_ratio, belt_sw_fill_ratio, belt_se_fill_ratio
            FROM conveyance_5m
            WHERE site = '{site.replace("'", "''")}'
              AND five_minute_interval > TIMESTAMP '{ts}' - INTERVAL {RECENT_MIN} MINUTE
              AND five_minute_interval <= TIMESTAMP '{ts}'
        ),
        readings AS (
            SELECT q.quadrant, u.t, u.fill
            FROM (UNPIVOT recent
                  ON belt_nw_fill_ratio, belt_ne_fill_ratio, belt_sw_fill_ratio, belt_se_fill_ratio
                  INTO NAME fill_column VALUE fill) AS u
            JOIN collector_quadrants AS q USING (fill_column)
        ),
        latest AS (SELECT quadrant, max(t) AS last_t FROM readings GROUP BY quadrant)
        SELECT q.quadrant, q.half, avg(r.fill)
        FROM collector_quadrants AS q
        LEFT JOIN latest AS l USING (quadrant)
        LEFT JOIN readings AS r
          ON r.quadrant = q.quadrant AND r.t >= l.last_t - INTERVAL {AVERAGE_MIN} MINUTE
        GROUP BY q.quadrant, q.half
        ORDER BY q.quadrant
    """
    rows = (await ctx.mcp.call("conveyance", "execute_query", {"sql": sql}))["rows"]
    missing = [quadrant for quadrant, _, fill in rows if fill is None]
    if missing:
        return Verdict(
            value="no_data",
            observed={"missing": missing},
            threshold=limits,
            explanation=(
                f"No fill reading in the last {RECENT_MIN} minutes for quadrant(s) "
                f"{', '.join(missing)}."
            ),
        )
    by_half: dict[str, list[float]] = {}
    for _, half, fill in rows:
        by_half.setdefault(half, []).append(fill)
    pct = {half: sum(f) / len(f) * 100 for half, f in by_half.items()}
    empty_enough = all(pct[half] <= limit for half, limit in limits.items())
    return Verdict(
        value="true" if empty_enough else "false",
        observed={"north_pct": round(pct["north"], 4), "south_pct": round(pct["south"], 4)},
        threshold=limits,
        explanation=(
            f"North half {pct['north']:.1f}% (max {limits['north']}%), south half "
            f"{pct['south']:.1f}% (max {limits['south']}%): "
            f"{'empty enough' if empty_enough else 'too full'} to downstage."
        ),
    )
