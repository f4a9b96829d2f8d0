"""rc_stations_down: are at least stations_down_min of the site's robots not running right now?

Ops store conventions: times are UTC text 'YYYY-MM-DD HH:MM:SS'; a state row covers
[started_at, ended_at), with ended_at NULL while the state lasts; a robot is down when its
state at the alarm is anything but 'running' (fault, maintenance, standby).
"""

from datetime import UTC, datetime

from sopgraph.graphs.model import Verdict


def _lit(s: object) -> str:
    return "'" + str(s).replace("'", "''") + "'"


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    need = ctx.params["stations_down_min"]
    t = datetime.fromisoformat(timestamp.replace("Z", "+00:00")).astimezone(UTC)
    at = _lit(t.strftime("%Y-%m-%d %H:%M:%S"))
    sql = f"""
        SELECT s.station, e.state
        FROM stations s
        LEFT JOIN equipment_states e
          ON e.site = s.site AND e.equipment_id = s.robot_id
         AND e.started_at <= {at} AND (e.ended_at IS NULL OR e.ended_at > {at})
        WHERE s.site = {_lit(site)}
        ORDER BY s.station"""
    rows = (await ctx.mcp.call("ops", "execute_query", {"sql": sql}))["rows"]
    known = [(st, state) for st, state in rows if state is not None]
    if not known:
        return Verdict(
            value="no_data",
            observed=None,
            threshold=need,
            explanation=f"No robot states for {site} at the alarm.",
        )
    down = sorted({st for st, state in known if state != "running"})
    return Verdict(
        value="true" if len(down) >= need else "false",
        observed={"stations": down},
        threshold=need,
        explanation=f"{len(down)} of {site}'s robots are not running: {', '.join(down) or 'none'}.",
    )
