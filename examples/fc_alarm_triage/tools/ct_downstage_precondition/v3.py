"""Tool for ct_downstage_precondition: the collector belt is empty enough to downstage.

Per the SOP (appendix D): each quadrant's fill is the average of its readings in the 5
minutes up to and including its most recent reading, where no reading may be older than 10
minutes: rows stamped in [alarm - 10 min, alarm], both ends inclusive, nulls skipped. A half
is the mean of its two quadrants (halves from conveyance's collector_quadrants table). A
quadrant with no reading leaves the check undecidable: no_data.

v3: v2's DuckDB-only ``UNPIVOT`` is four ``UNION ALL`` selects, and its interval is the
standard ``INTERVAL '5 minutes'``, so the same statement runs on DuckDB and on PostgreSQL
(the real stack's warehouse, issue 54). Verdicts unchanged.
"""

from __future__ import annotations

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import Window, sql

RECENT_MIN = 10
AVERAGE_MIN = 5
FILL_COLUMNS = ("belt_nw_fill_ratio", "belt_ne_fill_ratio", "belt_sw_fill_ratio",
                "belt_se_fill_ratio")  # fmt: skip

# one row a non-null reading, as UNPIVOT gave: each quadrant's latest row is its latest reading
_READINGS = "\n        UNION ALL ".join(
    f"SELECT '{c}' AS fill_column, t, {c} AS fill FROM recent WHERE {c} IS NOT NULL"
    for c in FILL_COLUMNS
)
_SQL = f"""
    WITH recent AS (
        SELECT five_minute_interval AS t, {", ".join(FILL_COLUMNS)}
        FROM conveyance_5m
        WHERE site = ? AND five_minute_interval >= CAST(? AS TIMESTAMP)
          AND five_minute_interval <= CAST(? AS TIMESTAMP)
    ),
    unpivoted AS (
        {_READINGS}
    ),
    readings AS (
        SELECT q.quadrant, u.t, u.fill
        FROM unpivoted AS u JOIN collector_quadrants AS q USING (fill_column)
    ),
    latest AS (SELECT quadrant, max(t) AS last_t FROM readings GROUP BY quadrant)
    SELECT q.quadrant, q.half, avg(r.fill)
    FROM collector_quadrants AS q
    LEFT JOIN latest AS l USING (quadrant)
    LEFT JOIN readings AS r
      ON r.quadrant = q.quadrant AND r.t >= l.last_t - INTERVAL '{AVERAGE_MIN} minutes'
    GROUP BY q.quadrant, q.half
    ORDER BY q.quadrant
"""


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    limits = {
        "north": ctx.params["downstage_north_max_pct"],
        "south": ctx.params["downstage_south_max_pct"],
    }
    w = Window.ending(timestamp, RECENT_MIN)
    rows = await sql(ctx, "conveyance", _SQL, site, w.sql_start, w.sql_end)
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
