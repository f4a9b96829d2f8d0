"""ct_cup_recently_replaced: was the robot's suction cup replaced within cup_replaced_days days?

Ops store conventions: times are UTC text 'YYYY-MM-DD HH:MM:SS'; `maintenance_log` rows
(component 'suction_cup', action 'replaced') carry the robot's `stations.robot_id`; only
work done at or before the alarm counts; no replacement on record means not recently.
"""

from datetime import UTC, datetime

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import sql as kit_sql


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    days = ctx.params["cup_replaced_days"]
    t = datetime.fromisoformat(timestamp.replace("Z", "+00:00")).astimezone(UTC)
    at = t.strftime("%Y-%m-%d %H:%M:%S")
    sql = """
        SELECT s.robot_id, MAX(m.performed_at)
        FROM stations s
        LEFT JOIN maintenance_log m
          ON m.site = s.site AND m.equipment_id = s.robot_id
         AND m.component = 'suction_cup' AND m.action = 'replaced' AND m.performed_at <= ?
        WHERE s.site = ? AND s.station = ?
        GROUP BY s.robot_id"""
    rows = await kit_sql(ctx, "ops", sql, at, site, input.get("station"))
    if not rows:
        return Verdict(
            value="no_data",
            observed=None,
            threshold=days,
            explanation="The alarmed station is not in the ops store.",
        )
    robot, last = rows[0]
    if last is None:
        return Verdict(
            value="false",
            observed={"robot": robot, "age_s": None},
            threshold=days,
            explanation=f"No suction cup replacement on record for robot {robot}.",
        )
    age_s = (t - datetime.fromisoformat(last).replace(tzinfo=UTC)).total_seconds()
    return Verdict(
        value="true" if age_s <= days * 86400 else "false",
        observed={"robot": robot, "age_s": age_s},
        threshold=days,
        explanation=f"Robot {robot}'s suction cup was replaced {age_s / 86400:.1f} days ago.",
    )
