"""Drafting in steps: sampling chosen by the checks, repair from failed checks, the DSPy step
on DummyLM, and the ``draft`` and ``publish`` commands."""

from __future__ import annotations

import json
import re
from pathlib import Path

import dspy
import pytest
from dspy.utils import DummyLM

from sopgraph.cli import main
from sopgraph.graphs.drafting.agreement import agreement
from sopgraph.graphs.drafting.document import read_text
from sopgraph.graphs.drafting.drafter import StepReply, StepRequest, draft
from sopgraph.graphs.drafting.outcomes import find_outcomes
from sopgraph.graphs.drafting.steps import Plan
from sopgraph.graphs.loader import load_sop
from sopgraph.prompts.drafting import dspy_propose

DOC = """# Refund check

## Steps

1. Check whether the order was delivered more than 30 days ago.
2. If it was, reject the refund.
3. Otherwise approve the refund.

## Decisions

- Approved: the refund is paid.
- Rejected: the refund is refused.
"""

# The right answer for each sentence: role, the step it follows (a sentence number or start),
# on which result, and the outcome an action ends in.
RIGHT = {1: ("decision", "start", "always", "none"), 2: ("action", 1, "yes", "answer_rejected"),
         3: ("action", 1, "no", "answer_approved")}  # fmt: skip
WRONG = {1: ("decision", "start", "always", "none"), 2: ("action", 1, "yes", "none"),
         3: ("context", 2, "always", "none")}  # fmt: skip


def _id(request: StepRequest, target) -> str:
    if isinstance(target, str):
        return target
    return next(
        t.split(":")[0] for t in request.targets.splitlines() if t.startswith(f"s{target}_")
    )


def _answer(request: StepRequest, table: dict) -> dict:
    steps = {}
    for key in re.findall(r"^s(\d+):", request.sentences, re.M):
        role, after, when, outcome = table[int(key)]
        steps[f"s{key}"] = {"role": role, "after": _id(request, after), "when": when,
                            "outcome": outcome}  # fmt: skip
    return {"steps": steps}


@pytest.fixture(autouse=True)
def _fresh_dspy():
    yield
    dspy.settings.configure(lm=None)


async def test_the_sample_with_fewest_failed_checks_is_kept():
    seen: list[int] = []

    async def propose(request: StepRequest) -> StepReply:
        seen.append(request.sample)
        return StepReply(_answer(request, RIGHT if request.sample == 1 else WRONG), 10, 5)

    result = await draft(read_text(DOC, "refund.md"), propose, samples=3, repairs=0)
    assert seen == [0, 1, 2]
    assert result.draft.problems == [] and result.sample_problems[1] == 0
    assert min(result.sample_problems[0], result.sample_problems[2]) > 0
    assert (result.cost.calls, result.cost.prompt_tokens, result.cost.completion_tokens) == (
        3,
        30,
        15,
    )
    sop = result.draft.text
    name = re.search(r"delivered more than \{(\w+)\} days ago", sop)[1]
    assert f"  {name}: 30\n" in sop
    assert "source: refund.md:5 (s1) Check whether" in sop


async def test_failed_checks_go_back_to_the_model_and_the_repair_is_kept():
    feedback: list[str] = []

    async def propose(request: StepRequest) -> StepReply:
        if request.feedback != "none":
            feedback.append(request.feedback)
            return StepReply(_answer(request, RIGHT))
        return StepReply(_answer(request, WRONG))

    # the structural candidate left out: it passes every check here and no repair would run
    result = await draft(read_text(DOC, "refund.md"), propose, samples=1, repairs=2,
                         structural=False)  # fmt: skip
    assert len(feedback) == 1 and "outcome 'Approved'" in feedback[0]
    assert "outcome 'Rejected'" in feedback[0]
    assert result.repairs == 1 and result.draft.problems == []


async def test_repairs_are_bounded_and_a_failed_step_is_counted():
    async def propose(request: StepRequest) -> StepReply:
        return StepReply(None, error="timeout")

    result = await draft(read_text(DOC, "refund.md"), propose, samples=2, repairs=2,
                         structural=False)  # fmt: skip
    assert result.cost.calls == 2 + 2 and result.cost.failed_calls == 4
    assert result.draft.problems  # every sentence context: the outcomes are unreachable


async def test_the_time_budget_starts_no_round_that_would_end_past_it(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr("sopgraph.graphs.drafting.drafter.time.monotonic", lambda: clock[0])

    async def propose(request: StepRequest) -> StepReply:  # each step takes 100 s
        clock[0] += 100.0
        return StepReply(None, error="slow")

    doc = read_text(DOC, "refund.md")
    # 100 s a sample: the third would end at 300 s, past a 250 s budget; no repair round
    result = await draft(doc, propose, samples=5, repairs=2, structural=True, budget_s=250)
    assert result.cost.calls == 2 and len(result.sample_problems) == 2
    assert result.cut == "the 250 s budget: 2 of 5 samples, 0 of 2 repair rounds"
    assert result.choice_line().endswith("(the 250 s budget: 2 of 5 samples, 0 of 2 repair rounds)")
    # with no budget every round runs, and nothing is said
    clock[0] = 0.0
    result = await draft(doc, propose, samples=3, repairs=0, structural=True)
    assert result.cost.calls == 3 and result.cut == ""


async def test_the_dspy_step_on_dummy_lm_drafts_a_sound_sop():
    doc = read_text(DOC, "refund.md")
    # DummyLM answers the signature's fields; the schema-constrained path is the local model's
    ids = {f"s{n}": i for n, i in Plan.of(doc, find_outcomes(doc)).ids.items()}
    steps = {
        "s1": {"role": "decision", "after": "start", "when": "always", "outcome": "none"},
        "s2": {"role": "action", "after": ids["s1"], "when": "yes", "outcome": "answer_rejected"},
        "s3": {"role": "action", "after": ids["s1"], "when": "no", "outcome": "answer_approved"},
    }
    lm = DummyLM([{"steps": json.dumps(steps)}])
    result = await draft(doc, dspy_propose(lm), samples=1, repairs=0)
    assert result.draft.problems == [], result.draft.text
    assert result.cost.calls == 1 and result.cost.failed_calls == 0


GOOD_STEPS = {
    "s1": {"role": "decision", "after": "start", "when": "always", "outcome": "none"},
    "s2": {"role": "action", "after": "s1_check_whether_order_was", "when": "yes",
           "outcome": "answer_rejected"},
    "s3": {"role": "action", "after": "s1_check_whether_order_was", "when": "no",
           "outcome": "answer_approved"},
}  # fmt: skip


def _drafted(tmp_path, monkeypatch, steps: dict, *options: str):
    """``sopgraph draft`` of DOC with a DummyLM answering ``steps``: the draft folder."""
    import sopgraph.nodes.models as models

    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(models, "dspy_lm", lambda **_: DummyLM([{"steps": json.dumps(steps)}] * 8))
    (tmp_path / "refund.md").write_text(DOC)
    out = tmp_path / "draft"
    argv = ["draft", str(tmp_path / "refund.md"), "-o", str(out), "--samples", "1", *options]
    assert main(argv) == 0
    return out


def test_draft_writes_the_folder_and_publish_versions_it(tmp_path, monkeypatch, capsys):
    out = _drafted(tmp_path, monkeypatch, GOOD_STEPS)
    printed = capsys.readouterr().out
    assert "0 failed checks" in printed and re.search(r"cost: 1 model calls .* \d+ s", printed)
    files = sorted(p.name for p in out.iterdir())
    assert files == ["draft.json", "review.md", "sop.mmd", "sop.yaml"]
    review = (out / "review.md").read_text()
    assert "All checks pass" in review and "Judgement steps" in review
    assert "`s1_check_whether_order_was`" in review  # no data decides it: a judgement step
    assert main(["validate", str(out / "sop.yaml")]) == 0
    assert main(["publish", str(out)]) == 0
    assert "version 1" in capsys.readouterr().out
    assert main(["publish", str(out)]) == 0  # the same file: the same version
    assert "version 1" in capsys.readouterr().out
    text = (out / "sop.yaml").read_text()
    (out / "sop.yaml").write_text(text.replace("approve the refund.", "approve the refund now."))
    assert main(["publish", str(out)]) == 0
    assert "version 2" in capsys.readouterr().out
    manifest = json.loads((tmp_path / "home/published/refund_check/manifest.json").read_text())
    assert [v["version"] for v in manifest["versions"]] == [1, 2] and manifest["active"] == 2


def test_publish_refuses_a_draft_whose_checks_fail(tmp_path, monkeypatch, capsys):
    steps = {k: {**v, "outcome": "none"} for k, v in GOOD_STEPS.items()}
    out = _drafted(tmp_path, monkeypatch, steps, "--repairs", "0", "--no-structural")
    capsys.readouterr()
    assert main(["publish", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert all(line.startswith("error: ") for line in err)
    assert any("outcome 'Approved'" in line for line in err) and "failed check(s)" in err[-1]
    assert not (tmp_path / "home" / "published").exists()


def test_an_edit_into_an_invalid_graph_is_refused_with_its_line(tmp_path, monkeypatch, capsys):
    out = _drafted(tmp_path, monkeypatch, GOOD_STEPS)
    text = (out / "sop.yaml").read_text().replace("- answer_rejected", "- answer_rejectd")
    (out / "sop.yaml").write_text(text)
    capsys.readouterr()
    assert main(["publish", str(out)]) == 2
    err = capsys.readouterr().err
    assert re.search(
        r"error: .*sop\.yaml:\d+: s2_was_reject_refund: .*unknown node 'answer_rejectd'", err
    )


def test_a_failed_draft_leaves_nothing_half_written(tmp_path, monkeypatch, capsys):
    import sopgraph.nodes.models as models

    (tmp_path / "refund.md").write_text(DOC)

    def broken_lm(**_):
        raise KeyboardInterrupt  # stopped mid-draft

    monkeypatch.setattr(models, "dspy_lm", broken_lm)
    assert main(["draft", str(tmp_path / "refund.md"), "-o", str(tmp_path / "draft")]) == 130
    assert sorted(p.name for p in tmp_path.iterdir()) == ["refund.md"]
    (tmp_path / "empty.md").write_text("# Notes\n\nThe office opens at nine.\n")
    assert main(["draft", str(tmp_path / "empty.md"), "-o", str(tmp_path / "d2")]) == 2
    assert "holds no procedure" in capsys.readouterr().err
    assert not (tmp_path / "d2").exists()


def test_data_hints_come_from_the_catalog_of_the_mcp_servers(tmp_path, monkeypatch):
    mcp_json = Path(__file__).parents[2] / "examples" / "service_interruption" / "mcp.json"
    steps = {**GOOD_STEPS, "s1": {**GOOD_STEPS["s1"], "data": "customer_service.check_area_outages"},
             "s2": {**GOOD_STEPS["s2"], "data": "customer_service.no_such_tool"}}  # fmt: skip
    out = _drafted(tmp_path, monkeypatch, steps, "--data", str(mcp_json))
    facts = json.loads((out / "draft.json").read_text())
    assert "customer_service.authenticate_customer" in facts["catalog"]
    sop = (out / "sop.yaml").read_text()
    assert "data:\n    - customer_service.check_area_outages" in sop
    assert "no_such_tool" not in sop  # a name outside the catalog never reaches the draft
    assert main(["publish", str(out)]) == 0


def test_the_structural_candidate_hints_the_data_its_steps_name(tmp_path, capsys):
    # no model: each decision's hint is the catalog tool whose name and description share
    # the most words with what the step does; a step that shares fewer than two has none
    root = Path(__file__).parents[2] / "examples" / "service_interruption"
    out = tmp_path / "draft"
    assert main(["draft", str(root / "sop.md"), "-o", str(out), "--samples", "0",
                 "--repairs", "0", "--data", str(root / "mcp.json")]) == 0  # fmt: skip
    sop = load_sop(out / "sop.yaml", check=False)
    hints = {n.id.split("_")[0]: n.data for n in sop.nodes.values() if n.data}
    assert hints == {
        "s4": ["customer_service.authenticate_customer"],  # Authenticate the customer's ...
        "s6": ["customer_service.verify_customer_account"],  # ..., verify the account status
        "s8": ["customer_service.check_area_outages"],  # ..., check for known outages
        "s11": ["customer_service.assess_line_connection_status"],
        "s13": ["customer_service.query_problem_resolution_status"],  # whether it is resolved
    }
    assert "0 failed checks" in capsys.readouterr().out  # every hint resolves in the catalog
    # the run's input: what the hinted tools require, so a tool can be made for each node
    assert list(sop.input) == ["case_id"] and sop.input["case_id"].required


def test_the_init_project_written_as_prose_drafts_to_its_graph(tmp_path, capsys):
    # tests/data/drafts/refund_request.md: `sopgraph init`'s SOP as a support team would write
    # it; drafted without a model against the project's own shop server
    project = tmp_path / "shop"
    assert main(["init", str(project)]) == 0
    out = tmp_path / "draft"
    doc = Path(__file__).parents[1] / "data" / "drafts" / "refund_request.md"
    assert main(["draft", str(doc), "-o", str(out), "--samples", "0", "--repairs", "0",
                 "--data", str(project / "mcp.json")]) == 0  # fmt: skip
    assert "0 failed checks" in capsys.readouterr().out
    drafted, hand = load_sop(out / "sop.yaml", check=False), load_sop(project / "sop.yaml")
    got = agreement(drafted, hand)
    assert (got["matched_nodes"], got["hand_nodes"], got["matched_edges"], got["hand_edges"]) == (
        5, 5, 4, 4)  # fmt: skip
    # each decision reads the table the hand-written node reads (the delivery window a column
    # of it), and the two thresholds are parameters
    hints = [n.data[0] for n in drafted.nodes.values() if n.data]
    assert hints == ["shop.deliveries.order_id", "shop.orders.amount"]
    assert sorted(drafted.params.values()) == [30, 100]
    # the "Input" section's phrases that name a hinted table's column, and the one that names
    # a time (the input's time, which specs read as $timestamp): the hand-written input's fields
    assert {k: f.type for k, f in drafted.input.items()} == {
        "order_id": "string", "region": "string", "timestamp": "datetime"}  # fmt: skip
    assert set(drafted.input) == set(hand.input)
