"""The SOP-agent importer: conditions, always edges, label/goto loops, errors with lines, output."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from sopgraph.graphs.importers import dump_sop_yaml, import_file
from sopgraph.graphs.importers.sopagent import CONDITION_OPS, import_sopagent
from sopgraph.graphs.loader import SopError, load_sop_text

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "service_interruption"


def _imp(text: str, file: str = "sop.yaml"):
    return import_sopagent(textwrap.dedent(text), file)


def _error(text: str) -> str:
    with pytest.raises(SopError) as exc:
        _imp(text)
    return str(exc.value)


def test_listing2_maps_apis_conditions_and_leaves():
    sop = import_file("sopagent", EXAMPLE / "sop_agent.yaml")
    assert sop.id == "service_interruption_handling"
    assert sop.entry == {"default": ["service_interruption_handle"]}
    auth = sop.nodes["authenticate_customer"]
    assert auth.kind == "observation"
    assert (auth.api.name, auth.tool) == ("authenticate_customer", "authenticate_customer")
    preds = [(c.if_.var, c.if_.op, c.if_.value, c.then) for c in auth.next.when]
    assert preds == [
        ("authentication_status", "eq", "failed", ["account_authentication_fails_advise_customer"]),
        ("authentication_status", "eq", "success", ["verify_customer_account"]),
    ]
    # A leaf without an API is a bare action; one with an API keeps it and gets its tool.
    advise = sop.nodes["account_authentication_fails_advise_customer"]
    assert (advise.kind, advise.api, advise.next.children()) == ("action", None, [])
    assert advise.text.startswith("if account authentication fails, advise the customer")
    # The same API called from two places: two nodes, one registry tool.
    escalations = [
        n
        for n in sop.nodes.values()
        if n.api and n.api.name == "escalate_issue_to_technical_support"
    ]
    assert [n.id for n in escalations] == [
        "escalate_issue_to_technical_support",
        "escalate_issue_to_technical_support_2",
    ]
    assert {n.kind for n in escalations} == {"action"}
    assert {n.tool_name for n in escalations} == {"escalate_issue_to_technical_support"}
    root = sop.nodes["service_interruption_handle"]
    assert root.title == "Customer reports service interruption"
    assert root.api.name == "ServiceInterruptionHandle"
    assert root.next.always == ["authenticate_customer"]
    assert sop.nodes["check_outage_resolution_time"].next.always == [
        "apologize_inconvenience_assure_customer_company"
    ]
    assert len(sop.nodes) == 14 and all(n.max_visits is None for n in sop.nodes.values())


def test_dump_round_trips_through_the_loader():
    sop = import_file("sopagent", EXAMPLE / "sop_agent.yaml")
    text = dump_sop_yaml(sop)
    assert load_sop_text(text, "out.yaml") == sop
    assert "    text: >-\n" in text  # long text is folded, not one 150-character line
    assert "- if: {var: account_status, op: eq, value: inactive due to unpaid bill}" in text
    assert max(len(line) for line in text.splitlines()) <= 100


@pytest.mark.parametrize(("condition_type", "op"), sorted(CONDITION_OPS.items()))
def test_every_condition_type_maps_to_a_predicate(condition_type, op):
    value = [1, 2] if op in ("in", "not_in") else 5
    sop = _imp(
        f"""
        - check the level:
          API: read_level
          Instructions:
            - raise the alarm:
              condition: {{"API": "read_level", "variable": "level", "condition_type": "{condition_type}", "value": {value}}}
        """
    )
    (cond,) = sop.nodes["read_level"].next.when
    assert cond.if_.var == "level" and cond.if_.op == op
    assert cond.if_.value == (None if op == "exists" else value)
    assert cond.then == ["raise_alarm"]


def test_always_and_natural_language_conditions():
    sop = _imp(
        """
        - all in one:
          condition_type: always
          API: {"name": "AllInOne", "description": "Perform all tasks."}
          Instructions:
            - think about the task:
              API: log_thought
              condition_type: always
              Instructions:
                - if the task is to clean, clean the object:
                  API: clean
                  condition_type: if
                - else, give up:
                  condition: if
        """
    )
    assert sop.nodes["all_in_one"].next.always == ["log_thought"]
    when = sop.nodes["log_thought"].next.when
    assert [(c.if_, c.then) for c in when] == [
        ("if the task is to clean, clean the object", ["clean"]),
        ("else, give up", ["give_up"]),
    ]
    assert sop.nodes["clean"].kind == "action" and sop.nodes["clean"].api.description == ""


def test_goto_label_loop_becomes_bounded_back_edge():
    # The retry loop of the paper's code-generation SOP (Appendix G), shortened.
    sop = _imp(
        """
        - simple_code_generation:
          condition_type: always
          API: {"name": "CodeGen", "description": "Generate code given the description."}
          Instructions:
            - Execute the generated program:
              API: python
              condition_type: always
              Instructions:
                - If there is an error, explain the error:
                  API: log_to_memory
                  condition_type: if
                  label: retry_loop_start
                  Instructions:
                    - Execute the generated program again:
                      API: python
                      condition_type: always
                      goto: retry_loop_start, retry_loop_end
                - If the code passed all unit tests, save your code:
                  API: save_code
                  condition_type: if
                  label: retry_loop_end
        """
    )
    again = sop.nodes["python_2"]
    assert [c.then for c in again.next.when] == [["log_to_memory"], ["save_code"]]
    assert sop.nodes["log_to_memory"].max_visits == 3
    assert sop.nodes["save_code"].max_visits == 3
    assert sop.nodes["python"].max_visits is None
    assert "at most 3 times" in sop.description
    text = dump_sop_yaml(sop)
    assert "max_visits: 3  # loop bound" in text
    assert load_sop_text(text, "out.yaml") == sop  # the validator accepts the bounded loop


def test_goto_with_always_target_and_custom_bound():
    # The retry step of the paper's data-cleaning SOP (Appendix H): it has no API and jumps
    # back to a step whose condition is "always".
    text = """
    - convert the columns to numbers:
      API: python
      label: convert
      Instructions:
        - if the previous step failed, retry previous step:
          condition_type: if
          goto: convert
        - else, save the data:
          condition_type: if
          API: save
    """
    sop = import_sopagent(textwrap.dedent(text), "clean.yaml", sop_id="cleaning", max_visits=5)
    assert sop.id == "cleaning"
    retry = sop.nodes["previous_step_failed_retry_previous"]
    assert (retry.kind, retry.next.always) == ("action", ["python"])
    assert sop.nodes["python"].max_visits == 5
    assert [c.then for c in sop.nodes["python"].next.when] == [[retry.id], ["save"]]


def test_loop_without_exit_is_reported_at_the_source_step():
    err = _error(
        """\
        - convert:
          API: python
          label: convert
          Instructions:
            - retry:
              condition_type: always
              goto: convert
        """
    )
    assert err.startswith("error: sop.yaml:5: retry: ") and "no way out" in err, err


def test_fields_indented_under_the_description_also_parse():
    sop = _imp(
        """
        - check the account:
            API: verify_account
            Instructions:
              - close it:
                  condition: {"API": "verify_account", "variable": "status", "condition_type": "is", "value": "closed"}
        """
    )
    assert sop.nodes["verify_account"].next.when[0].then == ["close"]


ERRORS = [
    (
        "unknown condition_type",
        """\
        - check:
          API: read
          Instructions:
            - act:
              condition: {"API": "read", "variable": "x", "condition_type": "roughly", "value": 1}
        """,
        5,
        "unsupported condition_type 'roughly'",
    ),
    (
        "goto to a missing label",
        """\
        - check:
          API: read
          goto: nowhere
        """,
        3,
        "goto 'nowhere' names no label",
    ),
    (
        "condition on another API",
        """\
        - check:
          API: read
          Instructions:
            - act:
              condition: {"API": "other", "variable": "x", "condition_type": "is", "value": 1}
        """,
        4,
        "tests API 'other' but the step before it calls 'read'",
    ),
    (
        "child without condition",
        """\
        - check:
          API: read
          Instructions:
            - act:
              API: do
        """,
        4,
        "step has no condition",
    ),
    (
        "unknown field",
        """\
        - check:
          API: read
          Priority: high
        """,
        3,
        "unknown field 'Priority'",
    ),
    (
        "duplicate label",
        """\
        - check:
          API: read
          label: a
          Instructions:
            - act:
              condition: always
              label: a
        """,
        7,
        "label 'a' is also used on line 3",
    ),
    (
        "step without description",
        """\
        - condition: always
          API: read
        """,
        1,
        "step has no description",
    ),
    (
        "bad API",
        """\
        - check:
          API: [read, write]
        """,
        2,
        "API must be a name or",
    ),
    (
        "structured condition missing a key",
        """\
        - check:
          API: read
          Instructions:
            - act:
              condition: {"API": "read", "variable": "x", "value": 1}
        """,
        5,
        "condition lacks 'condition_type'",
    ),
    (
        "in without a list",
        """\
        - check:
          API: read
          Instructions:
            - act:
              condition: {"API": "read", "variable": "x", "condition_type": "in", "value": 1}
        """,
        5,
        "needs a list value",
    ),
    (
        "not a list",
        """\
        just text
        """,
        1,
        "must be a YAML list of steps",
    ),
]


@pytest.mark.parametrize(("what", "text", "line", "message"), ERRORS, ids=[e[0] for e in ERRORS])
def test_unsupported_constructs_are_one_line_with_file_and_line(what, text, line, message):
    err = _error(text)
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"error: sop.yaml:{line}: "), err
    assert message in err


def test_yaml_syntax_error_has_a_line():
    err = _error("- check:\n  API: read\n   Instructions: [\n")
    assert err.startswith("error: sop.yaml:") and "YAML syntax" in err


def test_import_file_errors():
    with pytest.raises(SopError, match="unknown import format 'todbench'; use one of: sopagent"):
        import_file("todbench", EXAMPLE / "sop_agent.yaml")
    with pytest.raises(SopError, match="no such file"):
        import_file("sopagent", EXAMPLE / "missing.yaml")


def test_awkward_text_survives_the_dump():
    sop = _imp(
        """
        - "check: the 'level' # of tank A-1, then report it as \\"high\\" or \\"low\\" to the operator on duty right now":
          API: read
          Instructions:
            - "- true":
              condition: {"API": "read", "variable": "level", "condition_type": "is", "value": "yes"}
            - averyveryveryveryveryveryveryveryveryveryveryveryveryveryveryveryveryveryverylongword and more words to wrap:
              condition: {"API": "read", "variable": "level", "condition_type": "is", "value": true}
        """
    )
    assert load_sop_text(dump_sop_yaml(sop), "out.yaml") == sop
    assert sop.nodes["read"].next.when[0].if_.value == "yes"
    texts = [
        "line one\nline two\n",
        "a\n\nb",
        "  indented\nx",
        "tab\there\n",
        "trailing \nx",
        "x\n\n",
    ]
    for i, text in enumerate(texts):
        sop.nodes["read"].text = text
        sop.nodes["read"].api.description = text
        back = load_sop_text(dump_sop_yaml(sop), "out.yaml")
        assert (back.nodes["read"].text, back.nodes["read"].api.description) == (text, text), i
    assert sop.nodes["read"].next.when[1].if_.value is True


NATIVE = [
    *sorted((Path(__file__).resolve().parents[1] / "data" / "good_sops").glob("*.yaml")),
    *sorted(EXAMPLE.parent.glob("*/sop.yaml")),
]


@pytest.mark.parametrize("path", NATIVE, ids=[f"{p.parent.name}/{p.stem}" for p in NATIVE])
def test_dump_round_trips_hand_written_native_sops(path):
    # params, costs, approvals, verdict edges, `exists` predicates: whatever a person writes.
    sop = load_sop_text(path.read_text(), str(path))
    assert load_sop_text(dump_sop_yaml(sop, header="generated"), "out.yaml") == sop
