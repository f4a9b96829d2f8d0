"""ct_standby_capacity_safe: can the site's other running robots, at {station_rated_uph} UPH
each, cover last hour's units?

Ops store conventions: times are UTC text 'YYYY-MM-DD HH:MM:SS'; a state row covers [started_at,
ended_at), ended_at NULL while the state lasts; a station's robot is `stations.robot_id`.
Robotics: `units_inducted` is a per-station 5-minute count, so the site's last hour is
`sum_over_time(...[1h])` over (t-1h, t] summed over stations.
"""

import asyncio
from datetime import UTC, datetime

from sopgraph.graphs.model import Verdict


def _sql_time(ts: str) -> str:
    # The alarm's ISO time, written the way the ops store writes times, so text compares order.
    t = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    return t.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def _lit(s: object) -> str:
    return "'" + str(s).replace("'", "''") + "'"


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    rated_uph = ctx.params["station_rated_uph"]
    at = _lit(_sql_time(timestamp))
    sql = f"""
        SELECT count(*)
        FROM stations s
        JOIN equipment_states e ON e.site = s.site AND e.equipment_id = s.robot_id
        WHERE s.site = {_lit(site)} AND s.station != {_lit(input["station"])}
          AND e.state = 'running'
          AND e.started_at <= {at} AND (e.ended_at IS NULL OR e.ended_at > {at})"""
    query = f'sum_over_time(units_inducted{{site="{site}"}}[1h])'
    ops, robotics = await asyncio.gather(
        ctx.mcp.call("ops", "execute_query", {"sql": sql}),
        ctx.mcp.call(
            "robotics", "execute_query", {"query": query, "time": timestamp, "page_size": 1000}
        ),
    )
    if robotics.get("truncated"):
        raise RuntimeError(f"robotics returned a truncated result for {query}")
    running = int(ops["rows"][0][0])
    series = robotics["data"]["result"]
    if not series:
        return Verdict(
            value="no_data",
            observed={"running_others": running},
            threshold=None,
            explanation=f"No station of {site} reported inducted units in the last hour.",
        )
    flow = sum(float(s["value"][1]) for s in series)
    capacity = running * rated_uph
    safe = capacity >= flow
    return Verdict(
        value="true" if safe else "false",
        observed={"running_others": running, "capacity_uph": capacity, "flow_last_hour": flow},
        threshold=flow,
        explanation=(
            f"{running} other running robots give {capacity} UPH against {flow:.0f} units "
            f"inducted in the last hour ({'enough' if safe else 'not enough'})."
        ),
    )
