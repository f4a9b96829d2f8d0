"""A record test takes the declared value the node's branches state (check_polarity): the
branch texts decide which value makes the verdict true, never the order the values are declared
in, and a branch pair that states nothing (or both) leaves the drawn Check alone."""

from __future__ import annotations

import pytest

from sopgraph.graphs.model import Sop
from sopgraph.tools.spec import Check
from sopgraph.tools.toolmaker.check_polarity import polar_values, stated_test, stated_values

RECORDS = {"desk": {"lookup_badge": {"badge_state": {"type": "string",
                                                     "enum": ["valid", "expired_card"]}}}}  # fmt: skip


def _sop(yes: str, no: str) -> Sop:
    nodes = {
        "badge": {"kind": "observation", "text": "look up the visitor's badge",
                  "next": {"true": ["a"], "false": ["b"]}},
        "a": {"kind": "root_cause", "text": yes},
        "b": {"kind": "root_cause", "text": no},
    }  # fmt: skip
    return Sop.model_validate({"id": "s", "entry": {"visit": ["badge"]}, "nodes": nodes})


def _check(equals: str, op: str = ">", threshold: float = 0) -> dict:
    return {
        "value": "a",
        "measures": {"a": {"server": "desk", "tool": "lookup_badge", "args": {"id": "$id"},
                           "field": "badge_state", "equals": equals}},
        "scale": 1, "op": op, "threshold": threshold,
    }  # fmt: skip


def test_the_value_the_true_branch_states_is_the_one_tested():
    sop = _sop("If the card is expired, send the visitor to reception.",
               "When the badge is valid, open the gate.")  # fmt: skip
    fixed, note = stated_test(_check("valid"), RECORDS, sop, sop.nodes["badge"])
    assert fixed["measures"]["a"]["equals"] == "expired_card"
    assert (fixed["op"], fixed["threshold"]) == (">", 0)
    assert note is not None and "expired_card" in note and "true branch" in note
    Check.model_validate(fixed)  # still a valid Check


def test_a_check_that_already_agrees_is_left_as_drawn():
    sop = _sop("If the card is expired, stop.", "When the badge is valid, open the gate.")
    # the same verdicts written the other way round: true when the badge is not valid
    for drawn in (_check("expired_card"), _check("valid", "<", 1)):
        assert stated_test(drawn, RECORDS, sop, sop.nodes["badge"]) == (drawn, None)


def test_only_the_false_branch_stating_a_value_makes_the_test_a_negation():
    sop = _sop("Otherwise send the visitor to reception.", "If the badge is valid, open the gate.")
    fixed, note = stated_test(_check("valid"), RECORDS, sop, sop.nodes["badge"])
    assert fixed["measures"]["a"]["equals"] == "valid"
    assert (fixed["op"], fixed["threshold"]) == ("<", 1)
    assert "false branch" in note


@pytest.mark.parametrize(
    "yes, no",
    [
        ("If the badge is valid, open.", "If the badge is valid and late, wait."),  # both state it
        ("If the visitor is known, open.", "Otherwise wait."),  # neither states a value
        ("If the badge is valid or the card expired, open.", "Otherwise wait."),  # two values
    ],
)
def test_branches_that_do_not_single_out_a_value_say_nothing(yes, no):
    sop = _sop(yes, no)
    drawn = _check("valid")
    assert stated_test(drawn, RECORDS, sop, sop.nodes["badge"]) == (drawn, None)


def test_only_the_condition_clause_counts_and_words_are_stemmed():
    # "expired" after the comma is the consequence, not the condition
    texts = ["If the badge is valid, tell them cards expire yearly."]
    assert stated_values(["valid", "expired_card"], texts) == ["valid"]
    assert stated_values(["expired_card"], ["when the cards expired, stop"]) == ["expired_card"]
    assert stated_values(["none"], ["if there is none, stop"]) == []  # no word to find


def test_a_field_with_no_declared_values_or_a_formula_over_other_data_is_not_touched():
    sop = _sop("If the card is expired, stop.", "When the badge is valid, open.")
    untyped = {"desk": {"lookup_badge": {"badge_state": {"type": "string"}}}}
    drawn = _check("valid")
    assert stated_test(drawn, untyped, sop, sop.nodes["badge"]) == (drawn, None)
    other = {"server": "desk", "tool": "lookup_badge", "args": {}, "field": "visits"}
    formula = {**drawn, "value": "a + b", "measures": {**drawn["measures"], "b": other}}
    assert stated_test(formula, RECORDS, sop, sop.nodes["badge"]) == (formula, None)


def test_a_formula_over_tests_of_the_one_field_is_judged_by_its_verdicts():
    # abs(a - b) <= 0 over "valid" and "expired_card": true only when the badge is neither,
    # so false for the value the true branch states: set to that value's one test
    sop = _sop("If the card is expired, stop.", "When the badge is valid, open.")
    a, b = _check("valid")["measures"]["a"], _check("expired_card")["measures"]["a"]
    drawn = {**_check("valid"), "value": "abs(a - b)", "measures": {"a": a, "b": b},
             "op": "<=", "threshold": 0, "zero_division": "no_data"}  # fmt: skip
    fixed, note = stated_test(drawn, RECORDS, sop, sop.nodes["badge"])
    assert fixed == {**_check("expired_card"), "op": ">", "threshold": 0, "scale": 1}
    assert note == (
        "a: equals 'expired_card', > 0 (was abs(a - b)): the true branch states 'expired_card' "
        "(badge)"
    )
    # one that already gives the stated verdicts is left as drawn
    right = {**drawn, "value": "b - a", "op": ">", "threshold": 0}
    assert stated_test(right, RECORDS, sop, sop.nodes["badge"]) == (right, None)


PARCELS = {"desk": {"lookup_badge": {"badge_state": {"type": "string",
                                                     "enum": ["delay reported", "none"]}}}}  # fmt: skip


def test_with_no_value_stated_whole_the_clauses_polarity_decides():
    """ "delay reported" is half in "if there is a delay", "none" in no clause's words: the
    negated clause states the bare negation, the plain one the value sharing its word."""
    assert polar_values(["delay reported", "none"], ["if there is a delay, call"]) == [
        "delay reported"
    ]
    assert polar_values(["delay reported", "none"], ["else if there is no delay, go on"]) == [
        "none"
    ]
    assert polar_values(["not_started", "started"], ["if the job hasn't started, wait"]) == [
        "not_started"
    ]
    sop = _sop("If there is a delay, tell the visitor.", "If there is no delay, open the gate.")
    drawn = _check("none")  # true when there is none: the other way round
    fixed, note = stated_test(drawn, PARCELS, sop, sop.nodes["badge"])
    assert fixed["measures"]["a"]["equals"] == "delay reported"
    assert (fixed["op"], fixed["threshold"]) == (">", 0)
    assert "true branch states 'delay reported'" in note
    agreeing = _check("none", "<", 1)
    assert stated_test(agreeing, PARCELS, sop, sop.nodes["badge"]) == (agreeing, None)


def test_a_value_stated_whole_leaves_the_polarity_reading_out():
    """The first reading found a value: the second is not asked (here it would state both)."""
    records = {"desk": {"lookup_badge": {"badge_state": {"type": "string",
                                                         "enum": ["delay", "delay cleared"]}}}}  # fmt: skip
    sop = _sop("If there is a delay, tell the visitor.", "Otherwise open the gate.")
    fixed, _ = stated_test(_check("delay cleared"), records, sop, sop.nodes["badge"])
    assert fixed["measures"]["a"]["equals"] == "delay"
