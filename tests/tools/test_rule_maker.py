"""The rule tool-maker (``tools/toolmaker/rule_maker.py``) and the graph it is written into
(``decision_graph.py``), on our own test domain ``shipment_hold`` (a point score over three
tools' records) with scripted replies: the choice by agreement on unlabeled inputs, the
candidates refused unrun, the tool file run in the sandbox, and the written graph run by a
session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_chat import ScriptedChatModel
from langchain_core.messages import AIMessage

from sopgraph.evals.sopbench.domain import load_domain
from sopgraph.evals.sopbench.made import gathered_cases, gathers, make_inputs, outcome_values
from sopgraph.nodes.codeact_loop import extract_code
from sopgraph.tools.toolmaker.decision_graph import DECIDE, sop_dict, write_graph
from sopgraph.tools.toolmaker.rule_code import unstated
from sopgraph.tools.toolmaker.rule_maker import (
    Candidate,
    RuleMakeError,
    choose,
    make_rule,
    run_candidate,
    tool_file,
)

HOLD = Path(__file__).resolve().parents[1] / "data" / "sopbench" / "shipment_hold"

# the procedure as the SOP states it; "not found" is the getShipment call's error
RIGHT = """```python
def decide(data):
    if "getShipment_error" in data:
        return {"hold_decision": "Block"}
    d = abs(scanned_weight_kg - declared_weight_kg) / declared_weight_kg * 100
    points = 2 if d > 8 else (1 if d >= 4 else 0)
    points += 2 if prior_violations >= 3 else (1 if prior_violations >= 1 else 0)
    points += 1 if account_age_days < 60 else 0
    if points >= 4:
        return {"hold_decision": "Block"}
    return {"hold_decision": "Hold for Review" if points >= 2 else "Release"}
```"""
# one boundary off (more than 9 percent): disagrees with the others on few inputs
NEAR = RIGHT.replace("d > 8", "d > 9")
WRONG = """```python
def decide(data):
    return {"hold_decision": "Block" if data.get("prior_violations", 0) >= 1 else "Release"}
```"""
CONSTANT = '```python\nanswer = {"hold_decision": "Release"}\n```'
CATCHES = """```python
def decide(data):
    try:
        return {"hold_decision": "Block" if data["prior_violations"] > 2 else "Release"}
    except KeyError:
        return {"hold_decision": "Release"}
```"""
TOP_LEVEL = """```python
points = 2 if data["prior_violations"] >= 3 else 0
answer = {"hold_decision": "Block" if points else "Release"}
```"""
NOT_ALLOWED = """```python
def decide(data):
    return {"hold_decision": "Approve"}
```"""


def _expected(domain) -> dict[str, str]:
    return {t.task_id: t.expected["hold_decision"] for t in domain.tasks}


@pytest.fixture(scope="module")
def domain():
    return load_domain(HOLD)


@pytest.fixture(scope="module")
def cases(domain):
    import asyncio

    plan, _ = gathers(domain)
    return asyncio.run(gathered_cases(domain, plan, list(domain.tasks)))


def test_the_plan_calls_each_tool_the_input_can_and_the_outcomes_come_from_the_sop(domain):
    plan, skipped = gathers(domain)
    assert [g.tool for g in plan] == ["getShipment", "getScan", "getCustomerRecord"]
    assert all(g.args == ["shipment_id"] for g in plan) and skipped == []
    assert outcome_values(domain) == {"hold_decision": ["Release", "Hold for Review", "Block"]}


def test_make_inputs_are_drawn_by_seed_not_by_label(domain):
    a, b = make_inputs(domain, 5, 0), make_inputs(domain, 5, 1)
    assert len(a) == 5 and [t.task_id for t in a] == [t.task_id for t in make_inputs(domain, 5, 0)]
    assert [t.task_id for t in a] != [t.task_id for t in b]


def test_a_failed_call_is_data_the_rule_sees(cases):
    missing = [c for c in cases if c["input"]["shipment_id"] == "S_008"]
    (case,) = missing
    record = case["parents"]["obs_getShipment"]
    assert record["value"] == "no_data"
    assert "No shipment found" in record["observed"]["getShipment_error"]


async def test_the_tool_file_runs_in_the_sandbox_and_answers_each_input(domain, cases):
    allowed = outcome_values(domain)
    answers, errors = await run_candidate(
        tool_file(DECIDE, extract_code(RIGHT), allowed, "m", "test"), DECIDE, cases
    )
    expected = _expected(domain)
    got = {c["input"]["shipment_id"]: a for c, a in zip(cases, answers, strict=True)}
    assert errors == [None] * len(cases)
    for task_id, label in expected.items():
        assert got[task_id.split("-")[1]] == {"hold_decision": label}


async def test_an_answer_the_sop_does_not_state_and_an_error_are_no_answer(domain, cases):
    allowed = outcome_values(domain)
    answers, errors = await run_candidate(
        tool_file(DECIDE, extract_code(NOT_ALLOWED), allowed, "m", "test"), DECIDE, cases
    )
    assert answers == [None] * len(cases)
    assert "'Approve', not one of" in errors[0]
    code = "def decide(data):\n    return {'hold_decision': data['no_such_field']}"
    answers, errors = await run_candidate(tool_file(DECIDE, code, allowed, "m", "t"), DECIDE, cases)
    assert answers == [None] * len(cases) and errors[0].startswith("KeyError")


def test_choose_keeps_the_candidate_nearest_the_consensus():
    a, b = {"x": "1"}, {"x": "2"}
    c0 = Candidate(0, "", answers=[a, b, b, None], errors=[None] * 4)
    c1 = Candidate(1, "", answers=[a, b, a, a], errors=[None] * 4)
    c2 = Candidate(2, "", answers=[a, a, a, b], errors=[None] * 4)
    refused = Candidate(3, "", refused="the code does not parse")
    assert choose([c0, c1, c2, refused]) is c1  # consensus a, b, a, a
    assert (c0.agreement, c1.agreement, c2.agreement) == (2, 4, 2)
    assert choose([refused, Candidate(4, "", answers=[None], errors=["x"])]) is None


def test_choose_prefers_the_rule_that_reaches_more_stated_answers_over_a_shared_collapse():
    # two samples read the bands the same wrong way (nearly every input "d"); the one that
    # tells the inputs apart is kept although the other two outvote it on most inputs
    a, b, c, d = ({"x": v} for v in "abcd")
    collapsed = [d, d, d, d, b, d]
    c0 = Candidate(0, "", answers=collapsed, errors=[None] * 6)
    c1 = Candidate(1, "", answers=[a, b, c, d, b, c], errors=[None] * 6)
    c2 = Candidate(2, "", answers=[d, d, d, d, b, c], errors=[None] * 6)
    assert (c0.reach, c1.reach, c2.reach) == (2, 4, 3)
    assert choose([c0, c1, c2]) is c1
    assert c0.agreement > c1.agreement  # agreement alone would keep the collapse
    # a tie in agreement: more inputs answered, then the earlier sample
    t0 = Candidate(0, "", answers=[a, None], errors=[None, "e"])
    t1 = Candidate(1, "", answers=[a, b], errors=[None, None])
    assert choose([t0, t1]) is t1


async def test_make_rule_samples_refuses_unrun_and_keeps_the_agreeing_rule(domain, cases):
    model = ScriptedChatModel(
        responses=[AIMessage(r) for r in (WRONG, CONSTANT, RIGHT, CATCHES, RIGHT, NEAR, TOP_LEVEL)]
    )
    seen = []
    made = await make_rule(
        model, DECIDE, domain.sop_text, cases, outcome_values(domain), samples=7,
        model_name="scripted", progress=lambda i, n, s: seen.append((i, n, s)), repairs=False,
    )  # fmt: skip
    refused = {c.sample: c.refused for c in made.candidates if c.refused}
    assert refused == {
        1: "the code never reads `data` (a constant answer)",
        3: "the code catches errors itself (try/except)",
    }
    assert made.chosen.sample == 2  # the first of the two identical right rules
    assert made.chosen.agreement == len(cases)
    assert [s for _, _, s in seen][0] == f"{len(cases)}/{len(cases)} answered"
    assert made.calls == 7 and made.tokens["prompt"] > 0
    # no label was read, yet the kept rule gives every label
    expected = _expected(domain)
    by_id = {c["input"]["shipment_id"]: a for c, a in zip(cases, made.chosen.answers, strict=True)}
    assert all(by_id[k.split("-")[1]] == {"hold_decision": v} for k, v in expected.items())
    # the samples after the first are drawn at a temperature, a seed each
    kwargs = model.recorder.kwargs
    assert any(k.get("seed") == 1 and k.get("temperature") == 0.5 for k in kwargs)
    record = made.record()
    assert record["chosen"] == 2 and record["candidates"][0]["agreement"] < len(cases)
    assert "agreeing with the candidates' consensus on 12 of 12" in made.source


async def test_no_usable_rule_is_one_error_naming_each_sample(domain, cases):
    model = ScriptedChatModel(responses=[AIMessage(CONSTANT), AIMessage("no code at all")])
    with pytest.raises(RuleMakeError) as err:
        await make_rule(
            model, DECIDE, domain.sop_text, cases, outcome_values(domain), samples=2, repairs=False
        )
    text = str(err.value)
    assert "sample 0: the code never reads" in text and "sample 1:" in text


async def test_the_written_graph_runs_in_a_session_on_every_task(domain, cases, tmp_path):
    from sopgraph.evals.sopbench.compiled import CompiledGraphAgent

    model = ScriptedChatModel(responses=[AIMessage(RIGHT)])
    allowed = outcome_values(domain)
    made = await make_rule(model, DECIDE, domain.sop_text, cases, allowed, samples=1)
    plan, _ = gathers(domain)
    graph = write_graph(
        tmp_path / "g", "made_hold", "hold", plan, made, allowed, "sop.txt", "tool-maker:scripted"
    )
    manifest = json.loads((graph / "tools" / "manifest.json").read_text())
    assert manifest["tools"][DECIDE]["versions"]["1"]["author"] == "tool-maker:scripted"
    assert manifest["tools"]["fetch_record"]["versions"]["1"]["author"] == "human"
    async with CompiledGraphAgent(domain, graph) as agent:
        results = [(t, await agent.solve(t)) for t in domain.tasks]
    assert all(r.answer == t.expected for t, r in results)
    assert all(sum((r.tokens or {}).values()) == 0 for _, r in results)
    steps = results[0][1].steps
    assert [s["node"] for s in steps][-2] == DECIDE


def test_a_column_with_no_stated_values_cannot_be_written():
    with pytest.raises(ValueError, match="states no values"):
        write_graph(Path("/nonexistent"), "x", "x", [], None, {"status": []}, "sop", "human")  # type: ignore[arg-type]
    sop = sop_dict("x", "x", [], {"a": ["y", "n"], "b": ["k"]}, "sop")
    assert sop["entry"] == {"task": [DECIDE]}
    assert len(sop["nodes"][DECIDE]["next"]["when"]) == 3


# a condition on a value the SOP never states (copied from an example's data, say)
MADE_UP = """```python
def decide(data):
    if data["carrier"] in ("Night Freight", "Express"):
        return {"hold_decision": "Block"}
    return {"hold_decision": "Release"}
```"""


def test_unstated_names_the_values_a_rule_compares_with_that_the_sop_never_states():
    sop = 'A shipment marked "Fragile" is held; the decision is "Release" or "Block".'
    code = """def decide(data):
    if data["type"] == "task" and data["label"] in ["fragile", "Hazmat"]:
        return {"d": "Block"} if data["carrier"] != "Night Freight" else {"d": "Release"}"""
    # "fragile" is stated (case and spacing aside), "task" is every input's, not a condition
    assert unstated(code, sop, ["Release", "Block"], {"task"}) == ["Hazmat", "Night Freight"]
    assert unstated("x = (", sop, [], set()) == []


async def test_a_sample_with_a_problem_goes_back_once_and_its_fix_takes_its_place(domain, cases):
    # sample 0 makes up a condition, its fix is the SOP's rule; sample 1 does not parse and its
    # fix does not either: refused, with what was sent back
    model = ScriptedChatModel(
        responses=[AIMessage(r) for r in (MADE_UP, RIGHT, "```python\ndef decide(:\n```",
                                          "```python\nstill not (\n```")]
    )  # fmt: skip
    seen = []
    made = await make_rule(
        model, DECIDE, domain.sop_text, cases, outcome_values(domain), samples=2,
        progress=lambda i, n, s: seen.append(s),
    )  # fmt: skip
    first, second = made.candidates
    assert (
        first.repaired
        == "it compares data with 'Night Freight', 'Express', which the procedure never states"
    )
    assert first.code == extract_code(RIGHT) and first.unstated == []
    assert second.refused == "the code does not parse"
    assert second.repaired.startswith("it does not parse: invalid syntax (line 1)")
    assert made.chosen is first and made.calls == 4
    assert seen == [
        f"{len(cases)}/{len(cases)} answered (repaired)",
        "the code does not parse (repaired)",
    ]
    # the repair is asked in the same conversation, after the model's own reply
    sent = model.recorder.seen[1]
    assert sent[-2].content == MADE_UP and sent[-1].content.startswith(
        "Your function has a problem: it compares data with 'Night Freight'"
    )
    assert "does not parse: invalid syntax" in model.recorder.seen[3][-1].content
