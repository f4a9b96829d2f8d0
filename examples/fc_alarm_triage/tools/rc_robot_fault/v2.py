"""rc_robot_fault: is the alarmed station's robot in a fault state at the time of the alarm?

Ops store conventions: times are UTC text 'YYYY-MM-DD HH:MM:SS'; a state row covers
[started_at, ended_at), with ended_at NULL while the state lasts; the robot of a station
is `stations.robot_id`.

v2 (shadow candidate): the production ops store may serve `state` as its number code
(0 running, 1 fault, 2 standby, 3 maintenance) instead of the name; both are read. Values go
as query parameters (kit).
"""

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import sql, sql_time

STATE_NAMES = {0: "running", 1: "fault", 2: "standby", 3: "maintenance"}

_SQL = """
    SELECT s.robot_id, e.state
    FROM stations s
    LEFT JOIN equipment_states e
      ON e.site = s.site AND e.equipment_id = s.robot_id
     AND e.started_at <= ? AND (e.ended_at IS NULL OR e.ended_at > ?)
    WHERE s.site = ? AND s.station = ?
    ORDER BY e.started_at DESC
    LIMIT 1"""


def _name(state: object) -> str:
    if isinstance(state, str) and not state.isdigit():
        return state
    code = int(state)  # a number code, or its digits as text
    if code not in STATE_NAMES:
        raise ValueError(f"unknown equipment state code {code}")
    return STATE_NAMES[code]


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    at = sql_time(timestamp)
    rows = await sql(ctx, "ops", _SQL, at, at, site, input.get("station"))
    if not rows or rows[0][1] is None:
        what = "the station is unknown" if not rows else f"{rows[0][0]} has no state"
        return Verdict(
            value="no_data", observed=None, threshold="fault", explanation=f"{what} at the alarm."
        )
    robot, served = rows[0]
    state = _name(served)
    return Verdict(
        value="true" if state == "fault" else "false",
        observed={"robot": robot, "state": state},
        threshold="fault",
        explanation=f"Robot {robot} was '{state}' at the time of the alarm.",
    )
