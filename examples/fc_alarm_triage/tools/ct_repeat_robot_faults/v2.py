"""ct_repeat_robot_faults: did the station's robot go into fault repeat_fault_count+ times in 24 h?

Ops store conventions: times are UTC text 'YYYY-MM-DD HH:MM:SS'; each `equipment_states`
row is one entry into a state at started_at, so a fault row starting in (t - 24 h, t] is one
fault in the window.
"""

from datetime import timedelta

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import instant, sql_time
from sopgraph.tools.kit import sql as kit_sql


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    need = ctx.params["repeat_fault_count"]
    t = instant(timestamp)
    at, since = sql_time(t), sql_time(t - timedelta(hours=24))
    sql = """
        SELECT s.robot_id, COUNT(e.started_at)
        FROM stations s
        LEFT JOIN equipment_states e
          ON e.site = s.site AND e.equipment_id = s.robot_id AND e.state = 'fault'
         AND e.started_at > ? AND e.started_at <= ?
        WHERE s.site = ? AND s.station = ?
        GROUP BY s.robot_id"""
    rows = await kit_sql(ctx, "ops", sql, since, at, site, input.get("station"))
    if not rows:
        return Verdict(
            value="no_data",
            observed=None,
            threshold=need,
            explanation="The alarmed station is not in the ops store.",
        )
    robot, faults = rows[0]
    return Verdict(
        value="true" if faults >= need else "false",
        observed={"robot": robot, "faults_24h": faults},
        threshold=need,
        explanation=f"Robot {robot} went into fault {faults} times in the last 24 hours.",
    )
