"""rc_print_head_worn: was the station printer's print head last replaced over print_head_max_days ago?

Ops store conventions: times are UTC text 'YYYY-MM-DD HH:MM:SS'; `maintenance_log` rows
(component 'print_head', action 'replaced') carry the printer's `stations.printer_id`; only
work done at or before the alarm counts. A printer with no replacement on record has a head
of unknown age: the SOP's maintenance practice counts it as worn.

v2: v1 answered no_data for a printer with no replacement on record; values now go as query
parameters (kit).

v3: `observed` gives the age in days, the SOP text's unit (v2 gave seconds); the verdict
is decided exactly as in v2.
"""

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import from_sql_time, instant, sql, sql_time

_SQL = """
    SELECT s.printer_id, MAX(m.performed_at)
    FROM stations s
    LEFT JOIN maintenance_log m
      ON m.site = s.site AND m.equipment_id = s.printer_id
     AND m.component = 'print_head' AND m.action = 'replaced' AND m.performed_at <= ?
    WHERE s.site = ? AND s.station = ?
    GROUP BY s.printer_id"""


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    days = ctx.params["print_head_max_days"]
    t = instant(timestamp)
    rows = await sql(ctx, "ops", _SQL, sql_time(t), site, input.get("station"))
    if not rows:
        return Verdict(
            value="no_data",
            observed=None,
            threshold=days,
            explanation="The alarmed station is not in the ops store.",
        )
    printer, last = rows[0]
    if last is None:
        return Verdict(
            value="true",
            observed={"printer": printer, "age_days": None},
            threshold=days,
            explanation=f"Printer {printer} has no print head replacement on record: worn.",
        )
    age_s = (t - from_sql_time(last)).total_seconds()
    return Verdict(
        value="true" if age_s > days * 86400 else "false",
        observed={"printer": printer, "age_days": round(age_s / 86400, 4)},
        threshold=days,
        explanation=f"Printer {printer}'s print head was replaced {age_s / 86400:.1f} days ago.",
    )
