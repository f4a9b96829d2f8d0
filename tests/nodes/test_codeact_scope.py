"""The scope a check's text states, and the host's review of code against it."""

from __future__ import annotations

import pytest

from sopgraph.examples import EXAMPLES
from sopgraph.graphs.loader import load_sop
from sopgraph.nodes.codeact_scope import check_scope, scope_problem, share_problem

STATION_Q = (
    'r1 = robotics_execute_query(query=\'avg_over_time(x{site="FC1",station="ST05"}[15m])\')'
)
SITE_Q = "r1 = robotics_execute_query(query='avg_over_time(x{site=\"FC1\"}[15m])')"


@pytest.mark.parametrize(
    ("text", "scope"),
    [
        ("At least {n} induct stations of the site were each idle more than {p}%.", "spread"),
        ("At least {n} stations of the site each have a pick error rate above {p}%.", "spread"),
        ("The alarmed induct station was idle more than {p}% of the time.", "station"),
        ("The station's camera failed more than {p}% of its reads.", "station"),
        ("The robot's suction cup is worn: vacuum averaged below {kpa} kPa.", "station"),
        ("A maintenance ticket for this printer was already open.", "station"),
        # neither: the site's own equipment, or the site's other robots
        ("The sorter recorded at least {n} jams in the last 30 minutes.", None),
        ("Standby is safe if the site's other robots that are running cover the units.", None),
        ("At least {n} of the site's robots are not running right now.", None),
    ],
)
def test_the_scope_is_read_from_the_check_text(text, scope):
    assert check_scope(text) == scope


def test_station_checks_must_name_the_station_spreads_must_not():
    said = scope_problem(SITE_Q, "station", "ST05")
    assert said == "never names the alarmed station ST05 (the check is about that station)"
    assert scope_problem(STATION_Q, "station", "ST05") is None
    assert "counts the site's stations" in scope_problem(STATION_Q, "spread", "ST05")
    # a station id inside a longer one is not the station; no station or no scope: no opinion
    assert scope_problem(STATION_Q.replace("ST05", "ST051"), "station", "ST05") is not None
    assert scope_problem(SITE_Q, "station", None) is None
    assert scope_problem(SITE_Q, None, "ST05") is None


def test_a_spread_must_count_the_stations_not_read_one():
    counts = SITE_Q + "\nvalue = len([v for v in series_values(r1) if v > 3])"
    assert scope_problem(counts, "spread", "ST05") is None
    assert scope_problem(counts.replace("len([", "sum(1 for v in ["), "spread", None) is None
    first = SITE_Q + "\nvalue = series_values(r1)[0]"
    assert "does not count the site's stations" in scope_problem(first, "spread", "ST05")
    assert "does not count" in scope_problem(counts + "\nx = series_values(r1)[0]", "spread", None)


def test_every_spread_check_of_the_triage_sop_is_read_as_one():
    sop = load_sop(EXAMPLES / "fc_alarm_triage")
    spreads = sorted(n.id for n in sop.decision_nodes if check_scope(n.text) == "spread")
    assert spreads == ["obs_camera_fail_spread", "obs_idle_spread", "obs_pick_error_spread"]
    # the station checks the live runs measured over the site
    for node in ("obs_station_idle", "rc_camera_degraded", "rc_suction_cup_worn"):
        assert check_scope(sop.nodes[node].text) == "station", node


# alarm ALM-001396 (live, 2026-11-29): the idle spread's code, which counted 4 of 4 stations
# and answered their share
SHARE = (
    "r1 = robotics_execute_query(query='avg_over_time(station_idle_pct{site=\"DFW7\"}[15m])', "
    "time=NOW)\nfailing = len([v for v in series_values(r1) if v > 30])\n"
    "stations = len(series_values(r1))\nvalue = failing / stations\nprint(value)"
)


def test_a_spread_answers_the_count_not_a_share():
    assert share_problem(SHARE).startswith("divides the count into a share (value = failing")
    assert share_problem(SHARE.replace("failing / stations", "failing / stations * 100"))
    assert share_problem(SHARE.replace("value = failing / stations", "value = failing")) is None
    # a rate per station inside the count is not the value's share
    per = "value = len([s for s in rows if rows[s]['e'] / rows[s]['a'] * 100 > 3])"
    assert share_problem(per) is None
    assert share_problem("print(1)") is None and share_problem("value = (") is None


def test_the_review_sends_a_share_back_from_level_3():
    from sopgraph.nodes.codeact import CodeActRun, review
    from sopgraph.nodes.sandbox import SandboxLimits
    from sopgraph.prompts.codeact import FunctionSpec

    spec = FunctionSpec(name="robotics_execute_query", server="robotics", tool="execute_query",
                        description="", input_schema={"properties": {"query": {}, "time": {}}})  # fmt: skip
    specs = {spec.name: spec}

    def run(level):
        return CodeActRun(None, {spec.name: None}, specs, SandboxLimits(),  # type: ignore[arg-type]
                          hints=("robotics.station_idle_pct",), samples=3, grounded=True,
                          scope="spread", station="ST03", constrained=level)  # fmt: skip

    assert review(SHARE, run(3)).startswith("divides the count into a share")
    assert review(SHARE, run(2)) is None


def test_level_4_the_host_makes_a_spreads_share_the_count_it_divides():
    from sopgraph.nodes.codeact import CodeActRun, hold_code
    from sopgraph.nodes.codeact_scope import hold_count

    held, notes = hold_count(SHARE)
    assert "\nvalue = failing\nprint(value)" in held and held.count("failing / stations") == 0
    assert notes == [
        "value = failing / stations is a share: the check counts stations, value = failing"
    ]
    times = SHARE.replace("failing / stations", "failing / stations * 100")
    assert "\nvalue = failing\n" in hold_count(times)[0]
    indented = "if True:\n    value = failing / stations\n"
    assert hold_count(indented) == (indented, [])  # only a top-level value
    for unchanged in ("value = failing", "value = len(x) / 2 if x else 0", "value = (", "x = 1"):
        assert hold_count(unchanged) == (unchanged, [])
    # through the executor's holds: from level 4, for a spread check only
    text = f"```python\n{SHARE}\n```"
    run = CodeActRun(None, {}, {}, None, scope="spread", constrained=4)
    assert "\nvalue = failing\n" in hold_code(run, text)[0]
    run.constrained = 3
    assert hold_code(run, text)[0] == text
    run.constrained, run.scope = 4, "station"
    assert hold_code(run, text)[0] == text


# alarm ALM-001469 (live, 2026-11-29, level 4): "the station's robot is in a fault state" code
# that filtered on the station's robot, BFI4-R04, was sent back as naming no station (3 samples,
# each the same code)
ROBOT_Q = (
    'r1 = ops_execute_query(sql=\'SELECT count(*) FROM "equipment_states" WHERE '
    "\"equipment_id\" = ?', params=['BFI4-R04'])"
)


def test_level_5_a_station_is_named_by_its_devices_id():
    from sopgraph.nodes.codeact_scope import names_station

    assert scope_problem(ROBOT_Q, "station", "ST04") is not None  # level 4: sent back
    assert scope_problem(ROBOT_Q, "station", "ST04", devices=True) is None
    assert names_station(ROBOT_Q, "ST04", devices=True)
    # another station's robot, a site name with the digit, or no device: still not named
    assert scope_problem(ROBOT_Q, "station", "ST14", devices=True) is not None
    assert not names_station(ROBOT_Q.replace("BFI4-R04", "BFI4-R05"), "ST04", devices=True)
    assert not names_station("q(params=['BFI4'])", "ST04", devices=True)
    assert not names_station("q(params=['BFI4-R04'])", "ST04", devices=False)
    # a spread that filters to the station's robot reads one station
    assert scope_problem(ROBOT_Q, "spread", "ST04", devices=True) is not None
