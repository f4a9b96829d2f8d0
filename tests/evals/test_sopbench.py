"""SOP-Bench adapter, metrics, sampling, tool server and runner, on test domains in tests/data."""

from __future__ import annotations

from pathlib import Path

import pytest

from sopgraph.evals.sopbench.answer import parse_answer
from sopgraph.evals.sopbench.bloat import distractors
from sopgraph.evals.sopbench.domain import DomainError, load_domain, resolve_domain
from sopgraph.evals.sopbench.metrics import all_match, lenient_match, strict_match, summarise
from sopgraph.evals.sopbench.sample import stratified_sample

DATA = Path(__file__).parents[1] / "data" / "sopbench"
REFUND = DATA / "refund_check"


def test_tasks_show_only_input_columns():
    d = load_domain(REFUND)
    assert [t.name for t in d.tools] == ["getOrder", "daysSinceDelivery"]
    assert len(d.tasks) == 8
    for task in d.tasks:
        assert set(task.inputs) == {"order_id", "customer_note"}  # no days, no answer
        assert set(task.expected) == {"refund_decision"}
    assert d.tasks[1].expected == {"refund_decision": "Rejected"}


@pytest.mark.parametrize(
    ("folder", "says"),
    [
        ("missing_files", "missing tools.py, test_set_with_outputs.csv"),
        ("spec_mismatch", "tools ['issueRefund'] are not served by RefundManager"),
        ("no_input_columns", "no input_columns"),
        ("not_there", "no such domain folder"),
    ],
)
def test_malformed_domain_is_one_error_line(folder, says):
    with pytest.raises(DomainError) as err:
        load_domain(DATA / folder)
    assert says in str(err.value)
    assert "\n" not in str(err.value)


def test_without_input_columns_the_published_task_view_gives_them(tmp_path):
    import shutil

    folder = tmp_path / "viewed"
    shutil.copytree(DATA / "no_input_columns", folder)
    with_outputs = (folder / "test_set_with_outputs.csv").read_text().splitlines()
    header = with_outputs[0].split(",")
    # the published view: every column but the answer (here also listed, to be dropped)
    (folder / "test_set_without_outputs.csv").write_text(",".join(header) + "\n")
    d = load_domain(folder)
    assert d.output_columns == ["refund_decision"]
    assert d.input_columns == [c for c in header if c != "refund_decision"]
    assert all("refund_decision" not in t.inputs for t in d.tasks)
    assert d.tasks[1].expected == {"refund_decision": "Rejected"}


@pytest.mark.parametrize("folder", ["missing_files", "spec_mismatch", "no_input_columns"])
def test_cli_malformed_domain_one_line_exit_2(folder, capsys, tmp_path):
    from sopgraph.cli import main

    code = main(["bench", "sopbench", str(DATA / folder), "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and err[0].startswith("error: ") and str(DATA / folder) in err[0]
    assert not any(tmp_path.iterdir())  # nothing ran


@pytest.mark.parametrize("extra", [["--votes", "3"], ["--decide", "code", "--votes", "0"]])
def test_cli_votes_need_decide_by_code_and_a_count(extra, capsys, tmp_path):
    from sopgraph.cli import main

    code = main(["bench", "sopbench", str(REFUND), "--agent", "fc", "--out", str(tmp_path), *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and err[0].startswith(f"error: --votes {extra[-1]}:")
    assert not any(tmp_path.iterdir())  # nothing ran


def test_bare_name_resolves_under_data(tmp_path):
    assert resolve_domain("refund_check", DATA) == DATA / "refund_check"
    assert resolve_domain(str(REFUND)) == REFUND


def test_strict_and_lenient_matching():
    assert strict_match("hazard_class-d", "Hazard Class D")
    assert strict_match("N/A", "") and strict_match("null", None)
    assert strict_match("5.0", "5")
    assert not strict_match("Account Closure", "Permanent Account Closure")
    assert lenient_match("Account Closure", "Permanent Account Closure")
    assert not lenient_match("", "Account Closure")
    assert not lenient_match("Warning Issued", "No Action")
    expected = {"a": "Approved", "b": "update price"}
    assert all_match({"a": "approved", "b": "Update_Price"}, expected, lenient=False)
    assert not all_match({"a": "approved", "b": "no action"}, expected, lenient=True)
    assert not all_match(None, expected, lenient=True)


def test_summary_figures():
    def rec(completed, strict, lenient, tokens=10, seconds=2.0):
        return {
            "completed": completed,
            "strict": strict,
            "lenient": lenient,
            "tokens": {"total_tokens": tokens},
            "seconds": seconds,
        }

    s = summarise(
        [
            rec(True, True, True),
            rec(True, False, True),
            rec(True, False, False),
            rec(False, False, False),
        ]
    )
    assert (s.n, s.completed, s.correct_strict, s.correct_lenient) == (4, 3, 1, 2)
    assert s.ecr == 0.75 and s.ctsr_strict == pytest.approx(1 / 3) and s.tsr_strict == 0.25
    assert s.ctsr_lenient == pytest.approx(2 / 3) and s.tsr_lenient == 0.5
    assert s.tokens_per_task == 10 and s.seconds_per_task == 2.0


def test_parse_answer_forms():
    cols = ["seller_intent", "action"]
    text = "Thinking...\n<seller intent>concern about incorrect pricing</seller intent>\n<action>update price</action>"
    assert parse_answer(text, cols) == {
        "seller_intent": "concern about incorrect pricing",
        "action": "update price",
    }
    assert parse_answer("<final_decision>No Action</final_decision>", ["enforcement_action"]) == {
        "enforcement_action": "No Action"
    }
    escaped = "&lt;refund_decision&gt;Rejected&lt;/refund_decision&gt;"  # llama-cpp's escaping
    assert parse_answer(escaped, ["refund_decision"]) == {"refund_decision": "Rejected"}
    assert parse_answer("refund_decision: Approved", ["refund_decision"]) == {
        "refund_decision": "Approved"
    }
    assert parse_answer("<action>x</action>", cols) is None  # a field missing: not completed
    # models restate: the last tag wins
    assert parse_answer("<a>1</a> ... <a>2</a>", ["a"]) == {"a": "2"}


def test_stratified_sample_is_fixed_and_spans_labels():
    d = load_domain(REFUND)
    s1 = stratified_sample(d, 4, seed=1)
    assert [t.task_id for t in s1] == [t.task_id for t in stratified_sample(d, 4, seed=1)]
    assert len(s1) == 4
    assert {d.label(t) for t in s1} == {"Approved", "Rejected"}
    assert sum(d.label(t) == "Approved" for t in s1) == 2  # 4 of 8 approved: in proportion
    assert d.label(s1[0]) != d.label(s1[1])  # labels interleaved: a cut-short run stays spread
    assert len(stratified_sample(d, None)) == 8 and len(stratified_sample(d, 99)) == 8


def test_distractors_come_from_other_domains():
    d = load_domain(REFUND)
    items = distractors(d, 0.5, seed=0)  # half its 2 tools: 1, drawn from the other domains
    others = [f"{DATA / 'spec_mismatch'}:issueRefund"] + [
        f"{DATA / 'shipment_hold'}:{t}" for t in ("getShipment", "getScan", "getCustomerRecord")
    ]
    assert len(items) == 1 and items[0] in others
    assert sorted(distractors(d, 2, seed=0)) == sorted(others)  # every tool not its own
    assert distractors(d, 0, seed=0) == []
    with pytest.raises(DomainError, match="lower --bloat"):
        distractors(d, 10, seed=0)


def test_majority_baseline():
    from sopgraph.evals.sopbench.metrics import majority_tsr

    recs = [
        {"expected": {"a": x}} for x in ["No Action", "No Action", "Account Closure", "Warning"]
    ]
    assert majority_tsr(recs) == 0.5
    assert majority_tsr([]) == 0.0
