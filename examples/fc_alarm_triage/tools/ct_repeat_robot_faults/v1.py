"""ct_repeat_robot_faults: did the station's robot go into fault repeat_fault_count+ times in 24 h?

Ops store conventions: times are UTC text 'YYYY-MM-DD HH:MM:SS'; each `equipment_states`
row is one entry into a state at started_at, so a fault row starting in (t - 24 h, t] is one
fault in the window.
"""

from datetime import UTC, datetime, timedelta

from sopgraph.graphs.model import Verdict


def _sql_time(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def _lit(s: object) -> str:
    return "'" + str(s).replace("'", "''") + "'"


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    need = ctx.params["repeat_fault_count"]
    t = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    at, since = _lit(_sql_time(t)), _lit(_sql_time(t - timedelta(hours=24)))
    sql = f"""
        SELECT s.robot_id, COUNT(e.started_at)
        FROM stations s
        LEFT JOIN equipment_states e
          ON e.site = s.site AND e.equipment_id = s.robot_id AND e.state = 'fault'
         AND e.started_at > {since} AND e.started_at <= {at}
        WHERE s.site = {_lit(site)} AND s.station = {_lit(input.get("station"))}
        GROUP BY s.robot_id"""
    rows = (await ctx.mcp.call("ops", "execute_query", {"sql": sql}))["rows"]
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
