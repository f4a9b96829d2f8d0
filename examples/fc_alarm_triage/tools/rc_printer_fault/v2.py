"""rc_printer_fault: is the alarmed station's label printer in a fault state at the time of the alarm?

Ops store conventions: times are UTC text 'YYYY-MM-DD HH:MM:SS'; a state row covers
[started_at, ended_at), with ended_at NULL while the state lasts; the printer of a station
is `stations.printer_id`.
"""

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import sql as kit_sql
from sopgraph.tools.kit import sql_time


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    at = sql_time(timestamp)
    sql = """
        SELECT s.printer_id, e.state
        FROM stations s
        LEFT JOIN equipment_states e
          ON e.site = s.site AND e.equipment_id = s.printer_id
         AND e.started_at <= ? AND (e.ended_at IS NULL OR e.ended_at > ?)
        WHERE s.site = ? AND s.station = ?
        ORDER BY e.started_at DESC
        LIMIT 1"""
    rows = await kit_sql(ctx, "ops", sql, at, at, site, input.get("station"))
    if not rows or rows[0][1] is None:
        what = "the station is unknown" if not rows else f"{rows[0][0]} has no state"
        return Verdict(
            value="no_data", observed=None, threshold="fault", explanation=f"{what} at the alarm."
        )
    printer, state = rows[0]
    return Verdict(
        value="true" if state == "fault" else "false",
        observed={"printer": printer, "state": state},
        threshold="fault",
        explanation=f"Printer {printer} was '{state}' at the time of the alarm.",
    )
