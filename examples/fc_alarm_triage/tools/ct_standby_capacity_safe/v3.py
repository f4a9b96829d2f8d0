"""ct_standby_capacity_safe: can the site's other running robots, at {station_rated_uph} UPH
each, cover last hour's units?

Ops store conventions: times are UTC text 'YYYY-MM-DD HH:MM:SS'; a state row covers [started_at,
ended_at), ended_at NULL while the state lasts; a station's robot is `stations.robot_id`.
Robotics: `units_inducted` is a per-station 5-minute count, so the site's last hour is
`sum_over_time(...[1h])` over (t-1h, t] summed over stations.

v3: the same check as v2 on any Prometheus MCP server: the query asks only `query` and `time`
(prometheus-mcp-server refuses v2's `page_size`), at `kit.promql_time` (1 ms after the alarm, so
`[1h]` is (t-1h, t] on Prometheus 2 as on 3), and reads either answer shape
(`kit.promql_series`).
"""

import asyncio

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import promql_series, promql_time, selector, sql_time
from sopgraph.tools.kit import sql as kit_sql


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    rated_uph = ctx.params["station_rated_uph"]
    at = sql_time(timestamp)
    sql = """
        SELECT count(*)
        FROM stations s
        JOIN equipment_states e ON e.site = s.site AND e.equipment_id = s.robot_id
        WHERE s.site = ? AND s.station != ?
          AND e.state = 'running'
          AND e.started_at <= ? AND (e.ended_at IS NULL OR e.ended_at > ?)"""
    query = f"sum_over_time({selector('units_inducted', site=site)}[1h])"
    ops, robotics = await asyncio.gather(
        kit_sql(ctx, "ops", sql, site, input["station"], at, at),
        ctx.mcp.call("robotics", "execute_query", {"query": query, "time": promql_time(timestamp)}),
    )
    running = int(ops[0][0])
    series = promql_series(robotics, "robotics", query)
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
