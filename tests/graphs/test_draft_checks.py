"""The draft checks: each fails on an SOP broken its way and passes on a sound one."""

from __future__ import annotations

import pytest

from sopgraph.graphs.drafting import checks
from sopgraph.graphs.drafting.facts import DraftFacts, OutcomeFact, SentenceFact
from sopgraph.graphs.loader import load_sop_text
from sopgraph.graphs.yaml_lines import parse_yaml

SOUND = """\
id: refund
params:
  age_days_min: 30
entry:
  default: [s1_check_age]
nodes:
  s1_check_age:
    kind: constraint
    text: The order was delivered more than {age_days_min} days ago.
    data: [orders.delivered_at]
    source: refund.md:7 (s1) Check whether ...
    next:
      true: [answer_rejected]
      false: [s3_approve]
  s3_approve:
    kind: action
    text: Approve the refund.
    source: refund.md:9 (s3) Otherwise approve it.
    next:
      true: [answer_approved]
  answer_approved:
    kind: action
    title: "decision: Approved"
    source: refund.md:12 (s4)
  answer_rejected:
    kind: action
    title: "decision: Rejected"
    source: refund.md:13 (s5)
"""


def _facts(**changes) -> DraftFacts:
    sentences = [
        SentenceFact(number=n, cite=f"refund.md:{line} (s{n})", text=t, procedural=p)
        for n, line, t, p in [
            (1, 7, "Check whether the order was delivered more than 30 days ago.", True),
            (2, 8, "Refunds are popular.", False),
            (3, 9, "Otherwise approve it.", True),
            (4, 12, "Approved: the refund is paid.", True),
            (5, 13, "Rejected: the refund is refused.", True),
        ]
    ]
    outcomes = [
        OutcomeFact(field="decision", value="Approved", sentence=4),
        OutcomeFact(field="decision", value="Rejected", sentence=5),
    ]
    base = {"document": "refund.md", "sentences": sentences, "outcomes": outcomes,
            "catalog": ["orders.delivered_at", "orders.status"]}  # fmt: skip
    return DraftFacts(**{**base, **changes})


def _run(check, text: str, facts: DraftFacts | None = None):
    sop = load_sop_text(text, "sop.yaml", check=False)
    _, lines = parse_yaml(text, "sop.yaml")
    return check(sop, lines, "sop.yaml", facts or _facts())


@pytest.mark.parametrize("check", checks.CHECKS, ids=lambda c: c.__name__)
def test_every_check_passes_on_a_sound_draft(check):
    assert _run(check, SOUND) == []


def test_check_draft_passes_a_sound_draft_and_reports_file_line():
    assert checks.check_draft(SOUND, "sop.yaml", _facts()) == []
    broken = SOUND.replace("    next:\n      true: [answer_approved]\n", "")
    found = [str(p) for p in checks.check_draft(broken, "sop.yaml", _facts())]
    # the validator's problem (the outcome node hangs loose) and the draft check's
    assert found == [
        "error: sop.yaml:6: -: outcome 'Approved' (refund.md:12 (s4)) is stated by the document "
        "but no reachable node gives it; add an action titled 'decision: Approved' on the path "
        "that ends in it",
        "error: sop.yaml:19: answer_approved: not reachable from any entry; list it in another "
        "node's 'next' or in 'entry', or delete it",
    ]


def test_unreachable_node():
    text = SOUND.replace("      false: [s3_approve]\n", "      false: [answer_approved]\n")
    found = _run(checks.check_reachable, text)
    assert [(p.node, p.line) for p in found] == [("s3_approve", 15)]


def test_a_verdict_branch_that_leads_nowhere():
    text = SOUND.replace("      false: [s3_approve]\n", "")
    [p] = _run(checks.check_branches, text)
    assert p.node == "s1_check_age" and "'false' verdict leads nowhere" in p.message


def test_the_opening_statement_s_no_may_lead_nowhere_and_no_other_verdict():
    # the entry observes the document's opening statement: on no the procedure does not apply
    text = SOUND.replace("      false: [s3_approve]\n", "")
    assert _run(checks.check_branches, text, _facts(scope=1)) == []
    # only its 'false', and only for the opening statement
    [p] = _run(checks.check_branches, text, _facts(scope=2))
    assert "'false' verdict leads nowhere" in p.message
    [p] = _run(checks.check_branches, SOUND.replace("      true: [answer_rejected]\n", ""),
               _facts(scope=1))  # fmt: skip
    assert "'true' verdict leads nowhere" in p.message


def test_a_path_that_ends_at_a_decision():
    text = SOUND.replace("    next:\n      true: [answer_approved]\n", "").replace(
        "  s3_approve:\n    kind: action", "  s3_approve:\n    kind: observation"
    )
    [p] = _run(checks.check_ends, text)
    assert p.node == "s3_approve" and "a path ends at this decision" in p.message


def test_an_unbounded_loop():
    looped = SOUND.replace("      true: [answer_approved]\n", "      true: [s1_check_age]\n")
    [p] = _run(checks.check_loops, looped)
    assert "has no visit bound" in p.message
    bounded = looped.replace(
        "    kind: action\n    text: Approve",
        "    kind: action\n    max_visits: 3\n    text: Approve",
    )
    assert _run(checks.check_loops, bounded) == []


def test_a_stated_outcome_no_path_reaches():
    text = SOUND.replace("      true: [answer_rejected]\n", "      true: [s3_approve]\n")
    [p] = _run(checks.check_outcomes, text)
    assert "outcome 'Rejected' (refund.md:13 (s5))" in p.message


def test_an_unused_parameter():
    text = SOUND.replace("more than {age_days_min} days", "more than 30 days")
    [p] = _run(checks.check_params, text)
    assert "parameter 'age_days_min' is used by no node text" in p.message and p.line == 3


def test_a_data_hint_the_catalog_lacks():
    text = SOUND.replace("orders.delivered_at", "orders.delivered")
    [p] = _run(checks.check_data, text)
    assert (
        "'orders.delivered' is not in the catalog; did you mean 'orders.delivered_at'?" in p.message
    )
    assert _run(checks.check_data, text, _facts(catalog=None)) == []  # no catalog: not checked


def test_coverage_an_uncited_sentence_unless_listed_unused():
    text = SOUND.replace("refund.md:9 (s3) Otherwise approve it.", "approve")
    [p] = _run(checks.check_coverage, text)
    assert "sentence refund.md:9 (s3)" in p.message and "'unused'" in p.message
    assert _run(checks.check_coverage, text, _facts(unused=[3])) == []
