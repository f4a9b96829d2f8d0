"""ct_robot_ticket_open: was a ticket for the alarmed station's robot open at the time of the alarm?

Ops store conventions: times are UTC text 'YYYY-MM-DD HH:MM:SS'; `tickets.status` is the
status today, so "open at the time" is opened_at <= t < closed_at (closed_at NULL: still
open); a robot's tickets carry its `stations.robot_id` as equipment_id.
"""

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import sql as kit_sql
from sopgraph.tools.kit import sql_time


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    at = sql_time(timestamp)
    # A few tickets were closed before they were opened (entry errors); the interval test
    # leaves them never open rather than guessing which of the two times is wrong.
    sql = """
        SELECT s.robot_id, t.ticket_id
        FROM stations s
        LEFT JOIN tickets t
          ON t.site = s.site AND t.equipment_id = s.robot_id
         AND t.opened_at <= ? AND (t.closed_at IS NULL OR t.closed_at > ?)
        WHERE s.site = ? AND s.station = ?
        ORDER BY t.opened_at"""
    rows = await kit_sql(ctx, "ops", sql, at, at, site, input.get("station"))
    if not rows:
        return Verdict(
            value="no_data",
            observed=None,
            explanation="The alarmed station is not in the ops store.",
        )
    robot = rows[0][0]
    open_ids = [r[1] for r in rows if r[1] is not None]
    return Verdict(
        value="true" if open_ids else "false",
        observed={"robot": robot, "open_tickets": open_ids},
        explanation=(
            f"Ticket {', '.join(open_ids)} for robot {robot} was open at the time of the alarm."
            if open_ids
            else f"No ticket for robot {robot} was open at the time of the alarm."
        ),
    )
