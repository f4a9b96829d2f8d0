"""rc_pack_out_understaffed: is pack-out headcount this hour below staffing_min_pct% of plan?

Ops store conventions: `staffing` has one row per site, UTC hour (hour_start
'YYYY-MM-DD HH:00:00') and area; "this hour" is the hour the alarm falls in.

v3: `observed` also states the headcount present as a percent of plan, the unit of the
SOP's threshold; the verdict is decided exactly as in v2.
"""

from datetime import UTC, datetime

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import sql as kit_sql


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    pct = ctx.params["staffing_min_pct"]
    t = datetime.fromisoformat(timestamp.replace("Z", "+00:00")).astimezone(UTC)
    hour = t.strftime("%Y-%m-%d %H:00:00")
    sql = """
        SELECT planned_headcount, present_headcount
        FROM staffing
        WHERE site = ? AND area = 'pack_out' AND hour_start = ?"""
    rows = await kit_sql(ctx, "ops", sql, site, hour)
    if not rows or rows[0][0] is None or rows[0][1] is None:
        return Verdict(
            value="no_data",
            observed=None,
            threshold=pct,
            explanation=f"No pack-out staffing for {site} in the hour starting {hour}.",
        )
    planned, present = rows[0]
    # Compare in integers-times-100 so 80% of 10 is exactly 8, with no float rounding.
    short = present * 100 < pct * planned
    present_pct = round(present * 100 / planned, 4) if planned else None
    return Verdict(
        value="true" if short else "false",
        observed={"planned": planned, "present": present, "present_pct": present_pct},
        threshold=pct,
        explanation=(
            f"Pack-out has {present} of {planned} planned associates this hour"
            + (
                f" ({present_pct:.1f}%, {'below' if short else 'not below'} {pct}%)."
                if planned
                else "."
            )
        ),
    )
