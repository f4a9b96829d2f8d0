"""rc_stations_down: are at least {stations_down_min} of the site's robots not running right now?
(a spec: an `equipment_states` row covers [started_at, ended_at), ended_at NULL while the state
lasts, and a robot is in one state at a time; the site's robots are its equipment of type
'robot', one per station (each a `stations.robot_id`). A robot is down when its state at the
alarm is anything but 'running' (fault, maintenance, standby): the robots with a state at t
less those running. No robot with a state at t is no_data. Ops store times are UTC text
'YYYY-MM-DD HH:MM:SS'.)"""

from sopgraph.tools.spec import Check, Measure, tool

AT_T = {"server": "ops", "table": "equipment_states", "column": "state", "reduce": "count",
        "open_at": ("started_at", "ended_at")}  # fmt: skip

SPEC = Check(
    measures={
        "robots": Measure(where={"site": "$site", "equipment_type": "robot"}, **AT_T),
        "running": Measure(
            where={"site": "$site", "equipment_type": "robot", "state": "running"}, **AT_T
        ),
    },
    guard="robots", value="robots - running", op=">=", threshold="stations_down_min",
    unit=" robots",
)
run = tool(SPEC)
