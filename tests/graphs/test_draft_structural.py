"""The structural candidate (made without the model) on three documents of different shape, and
the chooser that keeps the candidate with the fewest failed checks among it and the model's."""

from __future__ import annotations

import json
import re
from pathlib import Path

from sopgraph.cli import main
from sopgraph.graphs.drafting.agreement import agreement
from sopgraph.graphs.drafting.checks import check_draft
from sopgraph.graphs.drafting.drafter import StepReply, StepRequest, draft
from sopgraph.graphs.drafting.facts import DraftFacts
from sopgraph.graphs.drafting.outcomes import find_outcomes
from sopgraph.graphs.drafting.reader import read_document
from sopgraph.graphs.drafting.steps import Plan, assemble, to_yaml
from sopgraph.graphs.drafting.structural import structural_answers
from sopgraph.graphs.drafting.words import stem
from sopgraph.graphs.loader import load_sop, load_sop_text

ROOT = Path(__file__).resolve().parents[2]
SERVICE = ROOT / "examples" / "service_interruption"
DRAFTS = ROOT / "tests" / "data" / "drafts"


def _structural(path: Path):
    doc = read_document(path)
    outcomes = find_outcomes(doc)
    plan = Plan.of(doc, outcomes)
    sop, unused = assemble(plan, structural_answers(plan))
    text = to_yaml(sop)
    facts = DraftFacts.of(doc, outcomes, None).model_copy(update={"unused": unused})
    return text, check_draft(text, "sop.yaml", facts)


def _edges(text: str) -> set[tuple[str, str, str]]:
    """(parent's sentence, branch, child's sentence or outcome) of every edge."""
    sop = load_sop_text(text, "sop.yaml", check=False)

    def short(node_id: str) -> str:
        return m[1] if (m := re.match(r"(s\d+)_", node_id)) else node_id

    return {
        (short(n.id), label, short(c)) for n in sop.nodes.values() for label, c in n.next.edges()
    }


def test_stems_meet_across_word_forms():
    assert stem("authentication") == stem("authenticate")
    assert stem("resolved") == stem("resolve") != stem("resolution")
    assert stem("inactive") != stem("active")


def test_numbered_conditions_attach_to_the_step_they_branch_on():
    text, problems = _structural(SERVICE / "sop.md")
    assert problems == []
    t, f = "true", "false"  # an action's next step is under "true" (it ends done)
    edges = _edges(text)
    assert {("s4", f, "s5"), ("s4", t, "s6"),  # authentication fails / is successful
            ("s6", t, "s7"), ("s6", f, "s8"),  # inactive for unpaid bills / active
            ("s8", t, "s9"), ("s9", t, "s10"),  # an outage; after informing of it
            ("s8", f, "s11"), ("s11", t, "s12"), ("s11", f, "s16"),  # operational / detected
            ("s12", t, "s13"), ("s13", t, "s14"), ("s13", f, "s15")} <= edges  # fmt: skip
    assert ("s5", t, "answer_credentials_advised") in edges
    assert ("s10", t, "answer_outage_reported") in edges
    figures = agreement(
        load_sop_text(text, "sop.yaml", check=False), load_sop(SERVICE / "sop.yaml")
    )
    assert (figures["matched_nodes"], figures["matched_edges"]) == (13, 12)


def test_nested_items_and_otherwise_in_a_list_with_a_table_of_outcomes():
    text, problems = _structural(DRAFTS / "expense_claim.md")
    assert problems == []
    assert _edges(text) == {
        ("s1", "true", "s2"),  # the opening statement holds: the steps
        ("s2", "false", "s3"), ("s2", "true", "s4"),  # receipt missing / all attached
        ("s4", "true", "s5"),  # "continue with the amount check": the next step
        ("s5", "true", "s6"), ("s5", "false", "s7"),  # at most the limit / otherwise
        ("s7", "true", "s8"),  # "After forwarding the claim": the step that forwards it
        ("s3", "true", "answer_returned"), ("s6", "true", "answer_approved"),
        ("s8", "true", "answer_forwarded"),
    }  # fmt: skip
    # the opening statement before the list is the entry observation, the steps on its yes
    assert load_sop_text(text, "sop.yaml", check=False).entry["default"] == [
        "s1_finance_reviewers_follow_these"
    ]


def test_a_step_after_branching_sub_items_follows_every_branch_that_goes_on(tmp_path):
    def edges_of(first: str, second: str) -> set[tuple[str, str, str]]:
        doc = tmp_path / "returns.md"
        doc.write_text(
            "# Returns\n\n## Steps\n\n"
            "1. Ask whether the parcel has left the warehouse.\n"
            f"   - If it has not left, {first}\n"
            f"   - If it has left, {second}\n"
            "2. Record the customer's reason in the log.\n"
        )
        return _edges(_structural(doc)[0])

    # neither branch says whether the procedure goes on, and neither ends in a stated outcome:
    # the next step follows both (before, only the last branch went on)
    edges = edges_of("hold the parcel.", "tell the customer it is too late.")
    assert {("s1", "false", "s2"), ("s1", "true", "s3")} <= edges  # has not left / has left
    assert {("s2", "true", "s4"), ("s3", "true", "s4")} <= edges
    # one branch says it goes on: only that one does; the other ends the procedure
    edges = edges_of("hold the parcel and go on to the next step.", "close the chat.")
    assert ("s2", "true", "s4") in edges
    assert not [e for e in edges if e[0] == "s3"]


def test_a_first_step_that_acts_follows_the_lead_in_that_says_what_the_procedure_is_for(
    tmp_path,
):
    steps = "## Steps\n\n1. Open the customer's account.\n2. Send the label by email.\n"
    doc = tmp_path / "label.md"
    doc.write_text(
        "# Labels\n\nEvery request for a new label must be handled with these steps.\n\n" + steps
    )
    text, problems = _structural(doc)
    sop = load_sop_text(text, "sop.yaml", check=False)
    assert problems == []
    (entry,) = sop.entry["default"]
    assert entry.startswith("s1_") and sop.nodes[entry].kind == "observation"
    # the opening statement says when the procedure applies: the steps follow on its yes
    assert sop.nodes[entry].next.true == [n for n in sop.nodes if n.startswith("s2_")]
    assert [n.kind for k, n in sop.nodes.items() if k.startswith(("s2_", "s3_"))] == [
        "action",
        "action",
    ]  # the first step still acts
    # with no lead-in, the first step itself is the observation the procedure starts from
    bare = tmp_path / "bare.md"
    bare.write_text("# Labels\n\n" + steps)
    text, problems = _structural(bare)
    sop = load_sop_text(text, "sop.yaml", check=False)
    (entry,) = sop.entry["default"]
    assert problems == [] and sop.nodes[entry].kind == "observation"


def _doc(tmp_path: Path, steps: str, opening: str = "Refund requests are handled so.") -> Path:
    doc = tmp_path / "refund.md"
    doc.write_text(f"# Refunds\n\n{opening}\n\n## Steps\n\n{steps}")
    return doc


def test_a_step_that_says_skip_goes_on_at_the_step_it_names(tmp_path):
    steps = (
        "1. Look up the order.\n"
        "2. Ask the warehouse whether the parcel came back, which will answer yes or no.\n"
        "   - If the parcel came back, skip to the Refund Payment step below.\n"
        "3. If the parcel did not come back, ask the customer to send it.\n"
        "   - Wait for the parcel and check its condition.\n"
        "4. Send the [Refund Payment] to the customer's card.\n"
    )
    text, problems = _structural(_doc(tmp_path, steps))
    edges = _edges(text)
    assert problems == []
    assert {("s3", "true", "s4"), ("s3", "false", "s5")} <= edges  # came back / did not
    assert ("s4", "true", "s7") in edges  # the skip: on at the step it names
    assert not [e for e in edges if e[0] == "s4" and e[2] != "s7"]
    # "skip the next step": on at the step after the next one
    text, problems = _structural(_doc(tmp_path, steps.replace(
        "skip to the Refund Payment step below", "skip the next step and pay")))  # fmt: skip
    assert ("s4", "true", "s7") in _edges(text) and problems == []


def test_a_condition_with_no_alternative_goes_on_past_it_on_the_other_result(tmp_path):
    steps = (
        "1. Send the confirmation email.\n"
        "   - If the customer asks, tell them the delivery date.\n"
        "2. Close the ticket.\n"
    )
    text, problems = _structural(_doc(tmp_path, steps))
    edges = _edges(text)
    assert problems == []  # no verdict leads nowhere
    assert {("s2", "true", "s3"), ("s2", "false", "s4"), ("s3", "true", "s4")} <= edges


def test_a_labelled_condition_and_a_branch_that_ends(tmp_path):
    steps = (
        "1. Ask whether the parcel has left the warehouse.\n"
        "   - If it has not left, hold the parcel.\n"
        "   - If it has left, tell the customer it is too late and end the conversation.\n"
        "2. Ask whether the customer wants a refund.\n"
        "3. (Option A) If the customer wants a refund, refund the order.\n"
        "4. (Option B) If the customer does not want a refund, keep the order.\n"
    )
    text, problems = _structural(_doc(tmp_path, steps))
    edges = _edges(text)
    assert {("s2", "false", "s3"), ("s2", "true", "s4")} <= edges
    assert ("s3", "true", "s5") in edges  # the branch that goes on joins the next step
    assert not [e for e in edges if e[0] == "s4"]  # the one that says it ends does not
    # "(Option A) If ...": a condition behind its label; the two are alternatives
    assert {("s5", "true", "s6"), ("s5", "false", "s7")} <= edges


def test_the_opening_statement_is_the_entry_for_the_model_s_answers_too(tmp_path):
    doc = read_document(_doc(tmp_path, "1. Look up the order.\n2. Refund the order.\n"))
    plan = Plan.of(doc, [])
    assert plan.scope is not None and plan.scope.number == 1 and 1 not in plan.ids
    # a model answer that starts at the first step: the entry is still the opening statement
    answers = {n: {"role": "action", "after": "start" if n == 2 else plan.ids[2],
                   "when": "always", "outcome": "none", "data": "none"} for n in plan.ids}  # fmt: skip
    sop, unused = assemble(plan, answers)
    assert sop["entry"] == {"default": ["s1_refund_requests_handled_so"]}
    assert sop["nodes"]["s1_refund_requests_handled_so"]["next"] == {"true": [plan.ids[2]]}
    # none where the document opens with a condition, or, in prose, with a step
    for opening in ("If a refund is asked for, follow these steps:",):
        assert Plan.of(read_document(_doc(tmp_path, "1. Refund it.\n", opening)), []).scope is None
    prose = tmp_path / "prose.md"
    prose.write_text("# Refunds\n\nCheck the order. If it is late, refund it.\n")
    assert Plan.of(read_document(prose), []).scope is None


def test_paragraph_prose_with_unless_and_an_enumerated_outcome():
    text, problems = _structural(DRAFTS / "sample_intake.md")
    edges = _edges(text)
    assert {
        ("s2", "true", "s3"),
        ("s2", "false", "s4"),  # seal broken / intact
        ("s4", "false", "s5"),
        ("s4", "true", "s6"),  # barcode cannot be read / is read
        ("s6", "false", "s7"),
        ("s6", "true", "s8"),
    } <= edges  # unless / if it lists a test
    assert ("s3", "true", "answer_rejected") in edges
    assert ("s7", "true", "answer_returned") in edges
    # "store the sample" shares no word with "accepted": the one outcome it cannot place
    assert [p.message.split(" (")[0] for p in problems if not p.node] == ["outcome 'accepted'"]


def _replying(table: dict[int, dict[str, str]]):
    """A model step answering every sentence from ``table`` (sentence number -> fields)."""

    async def propose(request: StepRequest) -> StepReply:
        keys = re.findall(r"^s(\d+):", request.sentences, re.M)
        return StepReply({"steps": {f"s{k}": table[int(k)] for k in keys}}, 10, 5)

    return propose


def _intake_answers():
    """sample_intake.md, its structural answers (2 failed checks), those with the missing
    outcome given (none failed) and every sentence context (more failed)."""
    doc = read_document(DRAFTS / "sample_intake.md")
    built = structural_answers(Plan.of(doc, find_outcomes(doc)))
    right = {n: dict(a) for n, a in built.items()}
    right[8]["outcome"] = "answer_accepted"
    wrong = {n: {**a, "role": "context"} for n, a in built.items()}
    return doc, built, right, wrong


async def test_the_chooser_keeps_the_fewest_failed_checks_and_a_tie_goes_to_the_model():
    doc, built, right, wrong = _intake_answers()

    result = await draft(doc, _replying(right), samples=1, repairs=0)
    assert (result.chosen, result.sample_problems, result.structural_problems) == (
        "sample 1", [0], 2)  # fmt: skip
    result = await draft(doc, _replying(wrong), samples=1, repairs=0)
    assert result.chosen == "structural" and len(result.draft.problems) == 2
    assert result.facts.chosen == "structural"
    assert result.facts.candidates == {"sample 1": result.sample_problems[0], "structural": 2}
    result = await draft(doc, _replying(built), samples=2, repairs=0)  # the same answers: a tie
    assert result.sample_problems == [2, 2] and result.chosen == "sample 1"
    result = await draft(doc, _replying(wrong), samples=1, repairs=0, structural=False)
    assert result.chosen == "sample 1" and result.structural_problems == -1


async def test_a_repair_of_the_structural_candidate_is_named_so():
    doc, _, right, wrong = _intake_answers()

    async def propose(request: StepRequest) -> StepReply:
        return await _replying(right if request.feedback != "none" else wrong)(request)

    result = await draft(doc, propose, samples=1, repairs=1)
    assert result.chosen == "structural repaired" and result.draft.problems == []


def test_samples_zero_drafts_the_structural_candidate_without_a_model(
    tmp_path, monkeypatch, capsys
):
    import sopgraph.nodes.models as models

    def no_model(**_):
        raise AssertionError("no model is started for --samples 0 --repairs 0")

    monkeypatch.setattr(models, "dspy_lm", no_model)
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    out = tmp_path / "draft"
    argv = ["draft", str(DRAFTS / "expense_claim.md"), "-o", str(out), "--samples", "0",
            "--repairs", "0"]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "0 failed checks, samples [], structural 0, chosen structural" in printed
    assert "cost: 0 model calls" in printed
    facts = json.loads((out / "draft.json").read_text())
    assert facts["chosen"] == "structural" and facts["candidates"] == {"structural": 0}
    assert "chosen structural" in (out / "review.md").read_text()
    assert main(["publish", str(out)]) == 0
