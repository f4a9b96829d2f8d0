"""ct_lens_cleaned_recently: was the station's camera lens cleaned within lens_clean_hours hours?

Ops store conventions: times are UTC text 'YYYY-MM-DD HH:MM:SS'; `maintenance_log` rows
(component 'camera_lens', action 'cleaned') carry the robot's `stations.robot_id`; only
work done at or before the alarm counts; no cleaning on record means not recently.
"""

from datetime import UTC, datetime

from sopgraph.graphs.model import Verdict


def _lit(s: object) -> str:
    return "'" + str(s).replace("'", "''") + "'"


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    hours = ctx.params["lens_clean_hours"]
    t = datetime.fromisoformat(timestamp.replace("Z", "+00:00")).astimezone(UTC)
    at = _lit(t.strftime("%Y-%m-%d %H:%M:%S"))
    sql = f"""
        SELECT s.robot_id, MAX(m.performed_at)
        FROM stations s
        LEFT JOIN maintenance_log m
          ON m.site = s.site AND m.equipment_id = s.robot_id
         AND m.component = 'camera_lens' AND m.action = 'cleaned' AND m.performed_at <= {at}
        WHERE s.site = {_lit(site)} AND s.station = {_lit(input.get("station"))}
        GROUP BY s.robot_id"""
    rows = (await ctx.mcp.call("ops", "execute_query", {"sql": sql}))["rows"]
    if not rows:
        return Verdict(
            value="no_data",
            observed=None,
            threshold=hours,
            explanation="The alarmed station is not in the ops store.",
        )
    robot, last = rows[0]
    if last is None:
        return Verdict(
            value="false",
            observed={"robot": robot, "age_s": None},
            threshold=hours,
            explanation=f"No lens cleaning on record for robot {robot}.",
        )
    age_s = (t - datetime.fromisoformat(last).replace(tzinfo=UTC)).total_seconds()
    return Verdict(
        value="true" if age_s <= hours * 3600 else "false",
        observed={"robot": robot, "age_s": age_s},
        threshold=hours,
        explanation=f"Robot {robot}'s camera lens was cleaned {age_s / 3600:.1f} hours ago.",
    )
