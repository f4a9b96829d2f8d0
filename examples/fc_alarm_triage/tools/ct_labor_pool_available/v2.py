"""ct_labor_pool_available: are at least min_float_staff float associates present this hour?

Ops store conventions: `staffing` has one row per site, UTC hour (hour_start
'YYYY-MM-DD HH:00:00') and area ('float' is the labor pool); "this hour" is the hour the
alarm falls in.
"""

from datetime import UTC, datetime

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import sql as kit_sql


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    need = ctx.params["min_float_staff"]
    t = datetime.fromisoformat(timestamp.replace("Z", "+00:00")).astimezone(UTC)
    hour = t.strftime("%Y-%m-%d %H:00:00")
    sql = """
        SELECT present_headcount
        FROM staffing
        WHERE site = ? AND area = 'float' AND hour_start = ?"""
    rows = await kit_sql(ctx, "ops", sql, site, hour)
    if not rows or rows[0][0] is None:
        return Verdict(
            value="no_data",
            observed=None,
            threshold=need,
            explanation=f"No float staffing for {site} in the hour starting {hour}.",
        )
    present = rows[0][0]
    return Verdict(
        value="true" if present >= need else "false",
        observed={"float_present": present},
        threshold=need,
        explanation=f"{present} float associates are present this hour.",
    )
