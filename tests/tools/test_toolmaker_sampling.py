"""The spec pipeline on a scripted model, against the triage SOP's real MCP servers.

The grammar names only what the servers hold; the library's demonstrations never show the
node's own tool or a copy of it; candidates are chosen by execution on the training cases;
the host's search fixes a convention; the LLM-free baseline is the same search with no model.
"""

from __future__ import annotations

import copy
import shutil

import pytest
from dspy.utils import DummyLM
from fc_world import fc_home, fc_world, make_session  # noqa: F401
from pydantic import ValidationError

from sopgraph.evals.toolmaker_eval import node_cases, spec_deps
from sopgraph.examples import EXAMPLES
from sopgraph.tools.commands import tools_promote, tools_revert
from sopgraph.tools.registry import Registry
from sopgraph.tools.toolmaker.demos import canonical
from sopgraph.tools.toolmaker.grammar import spec_model
from sopgraph.tools.toolmaker.pipeline import register
from sopgraph.tools.toolmaker.record import MakeRecord
from sopgraph.tools.toolmaker.sampling import make_spec_tool, score_spec_heldout
from sopgraph.tools.toolmaker.search import llm_free

shared_loop = pytest.mark.asyncio(loop_scope="module")
TRIAGE = EXAMPLES / "fc_alarm_triage"
FLOW = {  # obs_upstream_flow_low, right but for the percent: the ratio is compared unscaled
    "value": "a",
    "measures": {"a": {"server": "conveyance", "table": "conveyance_5m",
                       "column": "upstream_rate_ratio", "where": {"site": "$site"},
                       "time_column": "five_minute_interval", "minutes": 15, "reduce": "mean"}},
    "scale": 1, "op": "<", "threshold": "upstream_flow_min_pct", "missing": "no_data",
}  # fmt: skip


@pytest.fixture
def session(make_session):  # noqa: F811 - the fixture imported above
    return make_session


@shared_loop
async def test_the_grammar_names_only_what_the_servers_hold(session):
    deps = await spec_deps(session, "obs_upstream_flow_low")
    reply = spec_model(deps.data, ["upstream_flow_min_pct"], deps.input_fields)
    reply.model_validate({"spec": FLOW})
    for path, bad in [
        (("measures", "a", "column"), "upstream_rate"),  # no such column
        (("measures", "a", "table"), "conveyance"),  # no such table
        (("threshold",), "flow_pct"),  # no such parameter
        (("value",), "a * 2"),  # not a formula of the grammar
    ]:
        spec = copy.deepcopy(FLOW)
        target = spec
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = bad
        with pytest.raises(ValidationError):
            reply.model_validate({"spec": spec})


@shared_loop
async def test_demonstrations_are_similar_nodes_never_the_node_or_a_copy(session):
    deps = await spec_deps(session, "rc_upstream_blockage")
    shown = [d.node for d in deps.demos]
    assert len(shown) == 3 and "rc_upstream_blockage" not in shown
    # obs_upstream_flow_low reads the same column: a copy of the measurement, never shown
    assert "obs_upstream_flow_low" not in shown
    for d in deps.demos:
        cols = {m.get("column") for m in d.spec["measures"].values()}
        assert "upstream_rate_ratio" not in cols
        assert list(canonical(d.spec))[:2] == ["value", "measures"]  # the grammar's order
    cold = await spec_deps(session, "rc_upstream_blockage", demos_from="none")
    assert cold.demos == []


@shared_loop
async def test_candidates_are_chosen_by_execution_on_the_training_cases(session):
    deps = await spec_deps(session, "obs_upstream_flow_low")
    right = {**FLOW, "scale": 100}
    wrong = {**FLOW, "op": ">"}
    deps.lm = DummyLM([{"spec": wrong}, {"spec": right}, {"spec": wrong}])
    train = node_cases(session.cases, "obs_upstream_flow_low", "train")
    record = await make_spec_tool(deps, train, config="sop", samples=3)
    (rnd,) = record.rounds
    assert [s.duplicate_of for s in rnd.samples] == [None, None, 0]
    assert rnd.samples[1].passed == len(train) > rnd.samples[0].passed
    assert rnd.candidate.spec == right and rnd.found_by == "model"
    assert record.train_pass == 1.0
    assert "from sopgraph.tools.spec import tool" in rnd.candidate.code
    record = await score_spec_heldout(
        deps, record, node_cases(session.cases, "obs_upstream_flow_low", "eval")
    )
    assert record.eval_pass == 1.0


@shared_loop
async def test_a_made_spec_is_registered_inactive_then_promoted_with_a_diff_and_reverted(
    session, tmp_path
):
    node = "obs_upstream_flow_low"
    deps = await spec_deps(session, node)
    deps.lm = DummyLM([{"spec": {**FLOW, "scale": 100}}])
    record = await make_spec_tool(deps, node_cases(session.cases, node, "train"), samples=1)
    sop = tmp_path / "triage"
    shutil.copytree(TRIAGE, sop)  # the example's own library is left as it is
    registry = Registry(sop / "tools")
    before = registry.entry(node).active
    version = register(record, registry)
    entry = registry.entry(node)
    assert entry.active == before  # registered, not promoted
    info = entry.version(version)
    assert (info.author, info.train_pass) == (f"tool-maker:{record.model}", 1.0)
    saved = MakeRecord.model_validate_json((registry.lib_dir / node / info.record).read_text())
    assert saved.best.candidate.spec == {**FLOW, "scale": 100}

    shown = tools_promote(sop, node, version)
    assert f"+++ {node}/v{version}.py" in shown and "train 100%" in shown
    assert shown.endswith(f"{node}: v{version} is active (was v{before})")
    assert registry.resolve(node).version == version
    assert tools_revert(sop, node) == f"{node}: reverted to v{before} (was v{version})"
    assert registry.resolve(node).version == before


@shared_loop
async def test_the_search_fixes_a_fraction_against_a_percent(session):
    deps = await spec_deps(session, "obs_upstream_flow_low")
    deps.lm = DummyLM([{"spec": FLOW}])
    train = node_cases(session.cases, "obs_upstream_flow_low", "train")
    record = await make_spec_tool(deps, train, config="sop+r", samples=1)
    rnd = record.rounds[0]
    assert rnd.samples[0].passed < len(train)
    assert rnd.found_by == "search" and any(s.startswith("scale: 1 -> 100") for s in rnd.search)
    assert record.train_pass == 1.0 and len(record.rounds) == 1  # a full pass ends the make


@shared_loop
async def test_an_unusable_reply_is_a_failed_sample_kept_in_the_record(session):
    deps = await spec_deps(session, "obs_upstream_flow_low")
    deps.lm = DummyLM([{"spec": "not json at all"}])
    train = node_cases(session.cases, "obs_upstream_flow_low", "train")
    record = await make_spec_tool(deps, train, config="sop", samples=1)
    assert record.rounds[0].samples[0].problem and record.train_pass == 0.0
    assert record.notes == ["no round produced a spec that runs"]


@shared_loop
async def test_the_llm_free_baseline_searches_specs_with_no_model(session):
    deps = await spec_deps(session, "obs_station_idle")
    train = node_cases(session.cases, "obs_station_idle", "train")
    spec, score, tried = await llm_free(
        deps.runner, deps.node.text, list(deps.node.data), deps.data,
        deps.brief.param_names, deps.input_fields, train,
    )  # fmt: skip
    assert tried > 10 and score is not None and score.passed == len(train)
    assert spec["measures"]["x"]["metric"] == "station_idle_pct"


@shared_loop
async def test_spec_prompts_hold_no_own_tool_labeler_convention_or_held_out_case(session):
    """What the spec pipeline's model sees, for every node of the evaluated set."""
    import json

    from sopgraph.evals import fc_triage
    from sopgraph.evals.toolmaker_eval import NODE_SET
    from sopgraph.tools.registry import Registry
    from sopgraph.tools.toolmaker.sampling import inputs

    package = fc_triage.__file__.rsplit("/", 1)[0]
    forbidden = []
    for name in ("conventions.md", "labeler.py", "truth.py", "simulator.py", "faults.py"):
        text = open(f"{package}/{name}", encoding="utf-8").read()
        forbidden += [ln.strip() for ln in text.splitlines() if len(ln.strip()) > 40]
    registry = Registry(TRIAGE / "tools")
    for node in NODE_SET:
        deps = await spec_deps(session, node)
        text = "\n".join(inputs(deps, "sop+d+r", "none").values())
        own = getattr(registry.resolve(node).fn, "spec", None)
        assert own is not None, node
        assert json.dumps(canonical(own.to_dict()), separators=(", ", ": ")) not in text, node
        assert node not in [d.node for d in deps.demos]
        assert not [ln for ln in forbidden if ln in text], node
        train = {c.timestamp for c in node_cases(session.cases, node, "train")}
        held = [
            c.timestamp for c in node_cases(session.cases, node, "eval") if c.timestamp not in train
        ]
        assert not [t for t in held if t in text], node


@shared_loop
async def test_enumerated_candidates_join_the_samples_and_are_marked(session):
    deps = await spec_deps(session, "obs_upstream_flow_low")
    deps.lm = DummyLM([{"spec": {**FLOW, "op": ">"}}])
    train = node_cases(session.cases, "obs_upstream_flow_low", "train")
    right = {**FLOW, "scale": 100}
    record = await make_spec_tool(deps, train, config="sop", samples=1, extra_candidates=[right])
    (rnd,) = record.rounds
    assert rnd.found_by == "enumeration" and rnd.candidate.spec == right
    assert len(rnd.samples) == 1  # the record's samples are the model's; the rest are marked
    assert record.train_pass == 1.0


@shared_loop
async def test_label_free_chooses_by_the_samples_votes_never_the_labels(session):
    deps = await spec_deps(session, "obs_upstream_flow_low")
    right = {**FLOW, "scale": 100}
    wrong = {**FLOW, "op": ">"}
    train = node_cases(session.cases, "obs_upstream_flow_low", "train")
    # the labels are not read: every one of them wrong changes nothing
    lying = [c.model_copy(update={"expected": "true"}) for c in train]
    held_out = node_cases(session.cases, "obs_upstream_flow_low", "eval")
    deps.lm = DummyLM([{"spec": right}, {"spec": right}, {"spec": wrong}])
    record = await make_spec_tool(deps, lying, config="sop", samples=3, label_free=True)
    assert record.label_free and record.rounds[0].candidate.spec == right
    assert record.train_pass == 1.0  # agreement with the votes
    assert (
        "label-free: " in record.notes[0]
        and "votes of 3 samples (2 distinct specs)" in record.notes[0]
    )
    assert (await score_spec_heldout(deps, record, held_out)).eval_pass == 1.0
    # a wrong majority wins the vote: label-free is only as good as its samples
    deps.lm = DummyLM([{"spec": wrong}, {"spec": wrong}, {"spec": right}])
    record = await make_spec_tool(deps, train, config="sop", samples=3, label_free=True)
    assert record.rounds[0].candidate.spec == wrong
    assert (await score_spec_heldout(deps, record, held_out)).eval_pass < 1.0


def test_pseudo_labels_weigh_duplicates_and_break_ties_to_the_earliest():
    from sopgraph.tools.toolmaker.execution import Score
    from sopgraph.tools.toolmaker.record import Case, CaseResult
    from sopgraph.tools.toolmaker.sampling import pseudo_labels

    a, b = Case(site="S", timestamp="t1"), Case(site="S", timestamp="t2")

    def score(*values):
        return Score(
            results=[CaseResult(case=c, value=v) for c, v in zip((a, b), values, strict=True)]
        )

    votes = [(1, score("true", "false")), (2, score("false", None)), (1, score("true", "true"))]
    # a: true 2 (first at 0) vs false 2 (first at 1): the earliest; b: false 1 vs true 1: earliest
    assert pseudo_labels(votes) == {a.key(): "true", b.key(): "false"}
    assert pseudo_labels([(3, score("false", None)), (1, score("true", "true"))]) == {
        a.key(): "false",
        b.key(): "true",
    }
