"""Tool specs: the JSON form, the one-line errors, the queries they compile to, and the library.

The library test is the conversion's must-show: ``sopgraph tools convert-check`` on the triage
SOP counts the active tools that are specs and compares each with the version it replaced on
every labeled case, through the SOP's real MCP servers.
"""

from __future__ import annotations

import json

import pytest
from fc_world import fc_home, fc_world  # noqa: F401
from spec_library import library_checks

from sopgraph.cli import main
from sopgraph.examples import EXAMPLES
from sopgraph.tools.spec import Check, Measure, SpecError, tool
from sopgraph.tools.spec.expr import evaluate
from sopgraph.tools.spec.rows import select

TRIAGE = EXAMPLES / "fc_alarm_triage"
IDLE = {
    "measures": {
        "idle": {"server": "robotics", "metric": "station_idle_pct", "minutes": 15,
                 "match": {"site": "$site", "station": "$station"}},
    },
    "value": "idle", "op": ">", "threshold": "idle_pct_threshold",
}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"colour": "red"}, "spec: unknown field 'colour'"),
        ({"op": "=>"}, "op: '=>' is not one of"),
        ({"value": "idle * rate"}, "value: 'rate' is not a measurement"),
        ({"value": "__import__('os')"}, "value: "),
        ({"value": "idle.real"}, "value: "),
        ({"measures": {}}, "measures: a check needs at least one measurement"),
        ({"measures": {"idle": {"server": "robotics", "metric": "m", "minutes": 15, "reduce": "median"}}},
         "measures.idle.reduce: 'median' is not one of"),
        ({"measures": {"idle": {"server": "robotics", "metric": "m"}}},
         "measures.idle.minutes: a metric measurement needs a window"),
        ({"measures": {"idle": {"server": "ops", "table": "t", "reduce": "mean"}}},
         "measures.idle.column: reduce 'mean' needs a column"),
    ],
)  # fmt: skip
def test_a_bad_spec_is_one_error_naming_its_field(change, message):
    with pytest.raises(SpecError) as err:
        Check.from_dict({**IDLE, **change})
    assert str(err.value).startswith(message), str(err.value)
    assert "\n" not in str(err.value)


def test_the_json_form_round_trips():
    check = Check.from_dict(IDLE)
    assert Check.from_dict(json.loads(json.dumps(check.to_dict()))) == check
    assert check.to_dict()["measures"]["idle"] == {**IDLE["measures"]["idle"]}  # defaults left out


def test_every_library_spec_round_trips_through_json():
    checks = library_checks()
    assert checks, "the triage library has spec tools"
    for node, check in checks.items():
        again = Check.from_dict(json.loads(json.dumps(check.to_dict())))
        assert again == check, node


def test_values_are_query_parameters_never_sql_text():
    m = Measure(server="ops", table="tickets", reduce="count",
                where={"site": "$site", "category": "x' OR 1=1 --"})  # fmt: skip
    text, params = select(m, {"site": "BFI4"}, "2025-03-17T10:00:00Z")
    assert "OR 1=1" not in text and params == ["BFI4", "x' OR 1=1 --"]
    with pytest.raises(SpecError, match="not a plain table or column name"):
        select(
            Measure(server="ops", table="tickets; DROP TABLE x", reduce="count"),
            {},
            "2025-03-17T10:00:00Z",
        )


def test_the_formula_is_arithmetic_only():
    assert evaluate("100 * a / b", {"a": 3.0, "b": 60.0}) == 5.0
    assert evaluate("max(a, b) - min(a, b)", {"a": 1.0, "b": 4.0}) == 3.0
    with pytest.raises(ZeroDivisionError):
        evaluate("a / b", {"a": 1.0, "b": 0.0})


async def test_a_spec_tool_meets_the_contract_and_states_what_it_read():
    class Mcp:
        async def call(self, server, name, args):
            assert (server, name) == ("robotics", "execute_query")
            assert (
                args["query"] == 'avg_over_time(station_idle_pct{site="BFI4",station="ST01"}[15m])'
            )
            return {"data": {"result": [{"metric": {}, "value": [0, "31.5"]}]}}

    class Ctx:
        params = {"idle_pct_threshold": 25}
        mcp = Mcp()

    run = tool(IDLE)
    verdict = await run(
        {"site": "BFI4", "station": "ST01", "timestamp": "2025-03-17T10:00:00Z"}, Ctx()
    )
    assert (verdict.value, verdict.observed, verdict.threshold) == ("true", 31.5, 25)
    assert "idle=31.5" in verdict.explanation


@pytest.mark.slow
def test_convert_check_the_library_is_mostly_specs_and_each_is_verdict_identical(
    fc_home,  # noqa: F811 - the fixture imported above
    monkeypatch,
    capsys,
):
    monkeypatch.setenv("SOPGRAPH_HOME", str(fc_home))
    code = main(
        [
            "tools",
            "convert-check",
            str(TRIAGE),
            "--cases",
            str(fc_home / "fc_world" / "cases"),
            "--json",
        ]
    )
    rows = json.loads(capsys.readouterr().out)
    specs = [r for r in rows if r["spec"]]
    assert len(rows) == 44 and len(specs) >= 36, len(specs)
    bad = [
        f"{r['node']}: {r['identical']}/{r['cases']} {r['error'] or r['differences'][:1]}"
        for r in specs
        if not r["ok"]
    ]
    assert bad == [] and code == 0
    assert all(r["cases"] >= 100 for r in specs)  # train and held-out, not a handful
    # the copy groups are gone: each shared check is written once, its twins bind it
    from sopgraph.evals.spec_check import NodeCheck, copy_groups

    shared, copied = copy_groups(
        [NodeCheck(**{k: v for k, v in r.items() if k != "ok"}) for r in rows]
    )
    assert copied == [] and len(shared) == 5
    assert sum(r["binds"] is not None for r in specs) == 6
