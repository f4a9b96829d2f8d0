"""The Check fallback on a scripted model, against the triage SOP's real MCP servers.

Sampled Checks run on the run's input; the verdict most of them give wins and the Check that
gave it is registered as an inactive candidate; a tie or no Check that runs leaves the node
unresolved; a node whose tool works never reaches the model.
"""

from __future__ import annotations

import pytest
from dspy.utils import DummyLM
from fake_chat import ScriptedChatModel
from fc_world import fc_home, fc_world, make_session  # noqa: F401

from sopgraph.evals.toolmaker_eval import node_cases
from sopgraph.examples import EXAMPLES
from sopgraph.graphs.executors import ExecutorChain, ToolContext
from sopgraph.nodes.architectures import ArchitectureError, executors_for
from sopgraph.tools.registry import Registry
from sopgraph.tools.toolmaker.check_fallback import CheckFallback, NoModel
from sopgraph.tools.toolmaker.demos import canonical
from sopgraph.tools.toolmaker.grammar import bound_fields
from sopgraph.tools.toolmaker.sampling import tool_file

shared_loop = pytest.mark.asyncio(loop_scope="module")
NODE = "obs_upstream_flow_low"
# the library's own verified Check of the node, in the grammar's form (measurements a, b)
RIGHT = canonical(Registry(EXAMPLES / "fc_alarm_triage" / "tools").resolve(NODE).fn.spec.to_dict())
# its complement, the opposite verdict on every input: the threshold is written as the site's
# number (setup fills it in), which the SOP text states no comparison for, so none is settled
SITE_VALUE = "<the site's value of the threshold>"
WRONG = {**RIGHT, "op": ">=", "threshold": SITE_VALUE}


@pytest.fixture
def session(make_session):  # noqa: F811 - the fixture imported above
    return make_session


def setup(session, tmp_path, answers: list[dict], samples: int = 3, node_id: str = NODE):
    """A fallback over an empty library, the node, and the context of a case labelled true."""
    registry = Registry(tmp_path / "tools", sop_id=session.sop.id)
    case = next(c for c in node_cases(session.cases, node_id, "train") if c.expected == "true")
    inp = case.run_input
    value = session.params.for_input(inp).get(RIGHT["threshold"])
    answers = [
        {"spec": {**a["spec"], "threshold": value}}
        if isinstance(a.get("spec"), dict) and a["spec"].get("threshold") == SITE_VALUE
        else a
        for a in answers
    ]
    lm = DummyLM(answers)
    fallback = CheckFallback(session.sop, registry, lm, "fake", samples=samples, program=None)
    node = session.node(node_id)
    ctx = ToolContext(
        node_id=node_id, text=node.text, params=session.params.for_input(inp), parents={},
        input=inp, run_id="r1", mcp=session.pool, node=node,
    )  # fmt: skip
    return fallback, registry, lm, node, ctx


@shared_loop
async def test_the_majority_verdict_wins_and_its_check_is_a_candidate_version(session, tmp_path):
    answers = [{"spec": RIGHT}, {"spec": WRONG}, {"spec": RIGHT}]
    fallback, registry, _, node, ctx = setup(session, tmp_path, answers)
    outcome = await fallback.decide(node, ctx)
    assert outcome.verdict is not None and outcome.verdict.value == "true"
    trail = outcome.detail["check"]
    assert trail["votes"] == {"true": 2, "false": 1}
    assert [s.get("same_as") for s in trail["samples"]] == [None, None, 0]
    reg = trail["registered"]
    assert reg == {"tool": NODE, "version": 1, "author": "fallback:fake", "new": True}
    entry = registry.entry(NODE)
    assert entry.active is None  # a candidate: shadow compares it, a person promotes it
    (version,) = entry.versions
    assert version.author == "fallback:fake"
    assert registry.path_of(NODE, 1).read_text() == tool_file(NODE, node.text, RIGHT)
    # the same Check again is the same candidate, not a second version
    again, *_ = setup(session, tmp_path, answers)
    outcome = await again.decide(node, ctx)
    assert outcome.detail["check"]["registered"]["new"] is False
    assert len(registry.entry(NODE).versions) == 1
    # promoted, the candidate is the node's tool: read as data, as a tool-maker spec is
    registry.promote(NODE, 1)
    tool = registry.resolve(NODE)
    assert (await tool.fn(ctx.input, ctx)).value == "true"


@shared_loop
async def test_disagreement_leaves_the_node_unresolved_with_the_votes(session, tmp_path):
    # a tie draws as many samples again, once; they tie too
    answers = [{"spec": RIGHT}, {"spec": WRONG}, {"spec": WRONG}, {"spec": RIGHT}]
    fallback, registry, lm, node, ctx = setup(session, tmp_path, answers, samples=2)
    outcome = await fallback.decide(node, ctx)
    assert outcome.verdict is None
    assert outcome.error == "the sampled Checks disagree: 2 false, 2 true; no verdict taken"
    assert outcome.detail["check"]["votes"] == {"true": 2, "false": 2}
    assert len(lm.history) == 4
    assert registry.list() == []  # nothing worked: nothing is registered


@shared_loop
async def test_a_tie_draws_as_many_samples_again_once_and_only_on_a_tie(session, tmp_path):
    answers = [{"spec": RIGHT}, {"spec": WRONG}, {"spec": RIGHT}, {"spec": RIGHT}]
    fallback, _, lm, node, ctx = setup(session, tmp_path, answers, samples=2)
    outcome = await fallback.decide(node, ctx)
    assert outcome.verdict is not None and outcome.verdict.value == "true"
    assert outcome.detail["check"]["votes"] == {"true": 3, "false": 1}
    assert len(lm.history) == 4 and outcome.detail["check"]["drawn"] is True
    # the next input reads the first two again (they tie on it too): the four drawn, no call
    again = await fallback.decide(node, ctx)
    assert again.detail["check"]["votes"] == {"true": 3, "false": 1}
    assert len(lm.history) == 4 and again.detail["check"]["drawn"] is False
    # no tie, no more samples: two that agree are the verdict
    agree, _, lm, node, ctx = setup(session, tmp_path, [{"spec": RIGHT}] * 4, samples=2)
    outcome = await agree.decide(node, ctx)
    assert outcome.detail["check"]["votes"] == {"true": 2} and len(lm.history) == 2


@shared_loop
async def test_no_usable_check_leaves_the_node_unresolved(session, tmp_path):
    bad = {**RIGHT, "value": "a / b"}  # names a measurement the Check does not have
    # the rejected Check goes back once; its repair (the last reply) is rejected too
    answers = [{"spec": "not json at all"}, {"spec": bad}, {"spec": bad}]
    fallback, registry, _, node, ctx = setup(session, tmp_path, answers, samples=2)
    outcome = await fallback.decide(node, ctx)
    assert outcome.verdict is None
    assert outcome.error.startswith("none of 2 sampled Checks ran, e.g. no spec: ")
    samples = outcome.detail["check"]["samples"]
    assert all(s.get("problem") for s in samples)
    assert samples[-1]["repaired"] == "value: 'b' is not a measurement; use one of a"
    assert registry.list() == []


@shared_loop
async def test_a_check_the_validator_rejects_goes_back_once_with_its_reason(session, tmp_path):
    # a rule between fields, which the grammar does not hold: reduce mean needs a column
    no_column = {**RIGHT, "measures": {"a": {**RIGHT["measures"]["a"], "column": None}}}
    answers = [{"spec": no_column}, {"spec": RIGHT}, {"spec": no_column}, {"spec": RIGHT}]
    # replies in order: sample 1, its repair, sample 2 (the same rejected Check), sample 3
    fallback, _, lm, node, ctx = setup(session, tmp_path, answers)
    outcome = await fallback.decide(node, ctx)
    assert outcome.verdict is not None and outcome.verdict.value == "true"
    samples = outcome.detail["check"]["samples"]
    assert samples[0]["repaired"] == "measures.a.column: reduce 'mean' needs a column"
    assert samples[0]["spec"] == RIGHT and samples[0]["verdict"] == "true"
    # the same rejected Check again takes the first one's repair: no second repair call
    assert samples[1]["repaired"] == samples[0]["repaired"] and samples[1]["same_as"] == 0
    assert outcome.detail["check"]["votes"] == {"true": 3}
    assert len(lm.history) == 4  # 3 samples and 1 repair: the 2nd sample reused the first repair
    repair = lm.history[1]["messages"][-1]["content"]
    assert "this spec was rejected" in repair
    assert "measures.a.column: reduce 'mean' needs a column" in repair


@shared_loop
async def test_a_node_with_a_working_tool_never_calls_the_model(session, tmp_path):
    fallback, registry, lm, node, ctx = setup(session, tmp_path, [])
    registry.add_version(NODE, tool_file(NODE, node.text, RIGHT), "human", activate=True)
    chain = executors_for(
        "check", ScriptedChatModel(responses=[]), registry, lm=lm, check=fallback
    )  # fmt: skip
    assert [e.name for e in chain] == ["tool", "judge", "check", "codeact"]
    outcome = await ExecutorChain(chain).decide(node, ctx)
    assert outcome.executor == "tool" and outcome.verdict.value == "true"
    assert lm.history == []


def test_the_check_architecture_needs_a_model(tmp_path):
    registry = Registry(tmp_path / "tools", sop_id="x")
    with pytest.raises(ArchitectureError, match="needs a model: set SOPGRAPH_MODEL"):
        executors_for("check", None, registry)
    with pytest.raises(NoModel, match="needs a model"):
        CheckFallback(None, registry, None)  # type: ignore[arg-type]


@shared_loop
async def test_a_nodes_checks_are_drawn_once_and_run_on_each_input(session, tmp_path):
    # the prompt holds no input values: the second input runs the same Checks, no new calls
    fallback, _, lm, node, ctx = setup(session, tmp_path, [{"spec": RIGHT}] * 3)
    first = await fallback.decide(node, ctx)
    assert first.verdict.value == "true" and len(lm.history) == 3
    case = next(c for c in node_cases(session.cases, NODE, "train") if c.expected == "false")
    other = ToolContext(
        node_id=NODE, text=node.text, params=session.params.for_input(case.run_input),
        parents={}, input=case.run_input, run_id="r2", mcp=session.pool, node=node,
    )  # fmt: skip
    second = await fallback.decide(node, other)
    assert len(lm.history) == 3  # no new draw
    assert second.verdict.value == "false"  # the same Check, run on the other input
    # the draw's tokens are counted once, in the run that drew: the reuse spent none
    assert first.detail["check"]["drawn"] and not second.detail["check"]["drawn"]
    assert "input_tokens" in first.detail and "input_tokens" not in second.detail
    assert first.detail["input_tokens"] == sum(
        int((h.get("usage") or {}).get("prompt_tokens") or 0) for h in lm.history
    )


@shared_loop
async def test_check_only_decides_without_the_library(session, tmp_path):
    fallback, registry, lm, node, ctx = setup(session, tmp_path, [{"spec": WRONG}] * 3)
    registry.add_version(NODE, tool_file(NODE, node.text, RIGHT), "human", activate=True)
    chain = executors_for(
        "check-only", ScriptedChatModel(responses=[]), registry, lm=lm, check=fallback
    )  # fmt: skip
    assert [e.name for e in chain] == ["judge", "check", "codeact"]
    outcome = await ExecutorChain(chain).decide(node, ctx)
    # the library's tool says true; the sampled Checks (its complement) decide: false
    assert outcome.executor == "check" and outcome.verdict.value == "false"


@shared_loop
async def test_the_comparison_the_text_states_sets_the_operator(session, tmp_path):
    # "below {upstream_flow_min_pct}% of its planned rate": a sample comparing with >= is set
    # to <, recorded; the model is not asked again
    flipped = {**RIGHT, "op": ">="}
    fallback, _, lm, node, ctx = setup(session, tmp_path, [{"spec": flipped}], samples=1)
    outcome = await fallback.decide(node, ctx)
    (sample,) = outcome.detail["check"]["samples"]
    assert sample["settled"] == "op >= -> <: the text compares with {upstream_flow_min_pct} so"
    assert sample["spec"] == RIGHT and outcome.verdict.value == "true"
    assert len(lm.history) == 1


@shared_loop
async def test_the_declared_units_set_the_scale_and_a_count_goes_back(session, tmp_path):
    # the catalog says the metric is a percentage, the SOP text that its threshold is one
    node_id = "obs_label_fail_high"
    lib = Registry(EXAMPLES / "fc_alarm_triage" / "tools").resolve(node_id).fn.spec.to_dict()
    right = canonical(lib)
    assert right["scale"] == 1
    fallback, _, lm, node, ctx = setup(
        session, tmp_path, [{"spec": {**right, "scale": 100}}], samples=1, node_id=node_id
    )
    outcome = await fallback.decide(node, ctx)
    (sample,) = outcome.detail["check"]["samples"]
    assert sample["settled"].startswith("scale 100 -> 1: the value is a percentage")
    assert sample["spec"] == right and outcome.verdict.value == "true"
    assert len(lm.history) == 1  # set by the units: no call to repair it
    # a count read against a percentage has no scale that fixes it: it goes back, once
    count = {**right, "measures": {"a": {**right["measures"]["a"], "reduce": "count"}}}
    fallback, _, lm, node, ctx = setup(
        session, tmp_path, [{"spec": count}, {"spec": right}], samples=1, node_id=node_id
    )
    outcome = await fallback.decide(node, ctx)
    (sample,) = outcome.detail["check"]["samples"]
    assert sample["repaired"].startswith("value: the value is a count")
    assert sample["spec"] == right and outcome.verdict.value == "true"
    assert "a / b" in lm.history[1]["messages"][-1]["content"]


@shared_loop
async def test_a_count_threshold_takes_the_value_as_read(session, tmp_path):
    # "at least {sorter_jam_min} jams": no unit declared for the column, and the text does not
    # state the threshold as a percentage, so a sample's scale of 100 is set to 1, recorded
    node_id = "rc_sorter_jam"
    lib = Registry(EXAMPLES / "fc_alarm_triage" / "tools").resolve(node_id).fn.spec.to_dict()
    right = canonical(lib)
    fallback, _, lm, node, ctx = setup(
        session, tmp_path, [{"spec": {**right, "scale": 100}}], samples=1, node_id=node_id
    )
    outcome = await fallback.decide(node, ctx)
    (sample,) = outcome.detail["check"]["samples"]
    assert sample["settled"] == "scale 100 -> 1: {sorter_jam_min} is not stated as a percentage"
    assert sample["spec"] == right and outcome.verdict.value == "true"
    assert len(lm.history) == 1


@shared_loop
async def test_a_check_binding_a_field_this_entry_type_lacks_goes_back(session, tmp_path):
    # the node's alarms are site-level: their input names no station, so a Check that binds
    # one cannot run on them; it goes back with why, as a Check the validator rejects does
    station = {
        **RIGHT,
        "measures": {"a": {**RIGHT["measures"]["a"], "where": {"site": "$station"}}},
    }
    answers = [{"spec": station}, {"spec": RIGHT}]
    fallback, _, lm, node, ctx = setup(session, tmp_path, answers, samples=1)
    assert ctx.input.get("station") is None and session.sop.input["station"].required_for
    outcome = await fallback.decide(node, ctx)
    assert outcome.verdict is not None and outcome.verdict.value == "true"
    (sample,) = outcome.detail["check"]["samples"]
    why = "measures.a.where.site: $station is not an input field or lookup ($site, $timestamp)"
    assert sample["repaired"] == why and sample["spec"] == RIGHT
    assert why in lm.history[1]["messages"][-1]["content"]


def test_the_bound_fields_are_those_the_input_s_entry_type_carries(session):
    sop = session.sop
    assert bound_fields(sop, "upstream_starvation") == ["site", "timestamp"]
    assert bound_fields(sop, "station_idle") == ["site", "station", "timestamp"]
    assert bound_fields(sop) == ["site", "station", "timestamp"]  # any entry type's


@shared_loop
async def test_a_counts_repair_is_drawn_as_the_part_over_the_whole(session, tmp_path, monkeypatch):
    # the metric is a declared count and the text states a percentage: the repair's grammar is
    # the two-measurement shape, value a / b and scale 100, over the same catalog
    from sopgraph.tools.toolmaker import check_fallback

    node_id = "obs_label_fail_high"
    right = canonical(
        Registry(EXAMPLES / "fc_alarm_triage" / "tools").resolve(node_id).fn.spec.to_dict()
    )
    count = {**right, "measures": {"a": {**right["measures"]["a"], "reduce": "count"}}}
    formats = []

    async def spy(module, lm, fmt, config, texts):
        formats.append(fmt["schema"])
        return await real(module, lm, fmt, config, texts)

    real = check_fallback.sample_spec
    monkeypatch.setattr(check_fallback, "sample_spec", spy)
    fallback, _, lm, node, ctx = setup(
        session, tmp_path, [{"spec": count}, {"spec": right}], samples=1, node_id=node_id
    )
    await fallback.decide(node, ctx)
    first, repair = formats
    assert "OneMeasure" in first["$defs"] and "PartOfWhole" not in first["$defs"]
    part = repair["$defs"]["PartOfWhole"]["properties"]
    assert "OneMeasure" not in repair["$defs"]
    assert part["value"]["const"] == "a / b" and part["scale"]["const"] == 100
    assert set(part["measures"]["$ref"].split("/")[-1:]) == {"PartOfWholeMeasures"}
    # a count that the validator rejects first (a $name the input does not carry) is repaired
    # for that reason, under the node's own grammar
    formats.clear()
    unbound = {**count, "measures": {"a": {**count["measures"]["a"], "match": {"site": "$nope"}}}}
    fallback, _, lm, node, ctx = setup(
        session, tmp_path, [{"spec": unbound}, {"spec": right}], samples=1, node_id=node_id
    )
    outcome = await fallback.decide(node, ctx)
    assert outcome.detail["check"]["samples"][0]["repaired"].startswith("measures.a.match.site")
    first, repair = formats
    assert repair == first


@shared_loop
async def test_a_check_its_comparison_decides_before_reading_goes_back(session, tmp_path):
    # a count of rows compared ">= 0" is true on every input: it cannot vote, so it goes back
    # with the reason, and its repair (the library's own Check) votes in its place
    rows = {**RIGHT["measures"]["a"], "column": None, "reduce": "count"}
    always = {**RIGHT, "measures": {"a": rows}, "scale": 1, "op": ">=", "threshold": 0}
    answers = [{"spec": always}, {"spec": RIGHT}, {"spec": RIGHT}, {"spec": RIGHT}]
    fallback, _, lm, node, ctx = setup(session, tmp_path, answers)
    outcome = await fallback.decide(node, ctx)
    samples = outcome.detail["check"]["samples"]
    assert samples[0]["repaired"].startswith("op >= 0: the value is a count, never below 0")
    assert samples[0]["spec"] == RIGHT
    assert outcome.detail["check"]["votes"] == {"true": 3}
    assert "true before any data is read" in lm.history[1]["messages"][-1]["content"]
