"""rc_print_head_worn: was the station printer's print head last replaced over print_head_max_days ago?

Ops store conventions: times are UTC text 'YYYY-MM-DD HH:MM:SS'; `maintenance_log` rows
(component 'print_head', action 'replaced') carry the printer's `stations.printer_id`; only
work done at or before the alarm counts.
"""

from datetime import UTC, datetime

from sopgraph.graphs.model import Verdict


def _lit(s: object) -> str:
    return "'" + str(s).replace("'", "''") + "'"


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    days = ctx.params["print_head_max_days"]
    t = datetime.fromisoformat(timestamp.replace("Z", "+00:00")).astimezone(UTC)
    at = _lit(t.strftime("%Y-%m-%d %H:%M:%S"))
    sql = f"""
        SELECT s.printer_id, MAX(m.performed_at)
        FROM stations s
        LEFT JOIN maintenance_log m
          ON m.site = s.site AND m.equipment_id = s.printer_id
         AND m.component = 'print_head' AND m.action = 'replaced' AND m.performed_at <= {at}
        WHERE s.site = {_lit(site)} AND s.station = {_lit(input.get("station"))}
        GROUP BY s.printer_id"""
    rows = (await ctx.mcp.call("ops", "execute_query", {"sql": sql}))["rows"]
    if not rows or rows[0][1] is None:
        what = "the station is unknown" if not rows else f"no replacement of {rows[0][0]}"
        return Verdict(
            value="no_data",
            observed=None,
            threshold=days,
            explanation=f"No print head history: {what} on record.",
        )
    printer, last = rows[0]
    age_s = (t - datetime.fromisoformat(last).replace(tzinfo=UTC)).total_seconds()
    return Verdict(
        value="true" if age_s > days * 86400 else "false",
        observed={"printer": printer, "age_s": age_s},
        threshold=days,
        explanation=f"Printer {printer}'s print head was replaced {age_s / 86400:.1f} days ago.",
    )
