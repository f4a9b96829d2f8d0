"""TOD-ProcBench's three formats (paper 002, appendix B): each reads the paper's example, and
every format round-trips the project's examples losslessly, through the library and the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from sopgraph.cli import main
from sopgraph.graphs.importers import import_file
from sopgraph.graphs.importers.tod_formats import FORMATS, export_tod, import_tod
from sopgraph.graphs.loader import SopError, load_sop

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "tod"
EXAMPLES = ["service_interruption", "internet_support", "fc_alarm_triage"]
INTENT = "customer_received_email_confirmation_showing_incorrect"


def test_appendix_b_symbolic_example():
    """If c1: a1; If c2: a3 a4; a2 / If c3: a5 (f1) flattens to the paper's f2 and f3."""
    nested = "- If c1:\n  - a1\n  - If c2:\n    - a3\n    - a4\n  - a2\n- If c3:\n  - a5\n"
    sop = import_tod("tod_nested", nested)
    flat = export_tod("tod_flat", sop).split("\n", 1)[1]
    assert flat == (
        "If c1:\n    - a1\nIf c1 AND c2:\n    - a3\n    - a4\nIf c1:\n    - a2\nIf c3:\n    - a5\n"
    )
    assert import_tod("tod_flat", flat) == sop
    # the graph: conditions in order, a body continuing with the next step
    assert sop.entry == {"default": ["c1"]}
    assert sop.nodes["c1"].next.true == ["a1"] and sop.nodes["c1"].next.false == ["c3"]
    assert sop.nodes["c2"].next.true == ["a3"] and sop.nodes["c2"].next.false == ["a2"]
    assert sop.nodes["a4"].next.always == ["a2"] and sop.nodes["a2"].next.always == ["c3"]


@pytest.mark.parametrize(
    ("kind", "file"),
    [("tod_nested", "quantity_nested.txt"), ("tod_flat", "quantity_flat.txt"),
     ("tod_json", "quantity.json")],
)  # fmt: skip
def test_reads_the_papers_example(kind, file):
    sop = import_file(kind, DATA / file)
    intent = sop.nodes[INTENT]
    assert sop.entry == {"default": [INTENT]} and intent.kind == "observation"
    assert intent.api is None and not intent.data  # a conversation condition: the judge's
    assert sop.nodes["email_was_incorrect"].next.false == ["email_was_correct"]
    assert sop.nodes["order_has_already_shipped"].next.true == ["check_shipping_status"]
    # f1 keeps the paper's inline "If delivered, start return process ..." as a condition
    after = "delivered" if kind == "tod_nested" else "offer_refund_for_extra_item_s"
    assert sop.nodes["check_shipping_status"].next.always == [after]


def test_nested_and_flat_example_agree():
    nested = import_file("tod_nested", DATA / "quantity_nested.txt")
    flat = export_tod("tod_flat", nested)
    assert "AND email was incorrect AND order has already shipped AND delivered:" in flat
    assert import_tod("tod_flat", flat) == nested


def test_data_conditions_become_data_nodes():
    sop = import_tod("tod_flat", "If the membership level is gold:\n    - offer a refund\n")
    node = sop.nodes["membership_level_gold"]
    assert node.kind == "constraint" and node.data == ["customer.member_level"]
    judge = import_tod("tod_flat", "If the customer asks about the return policy:\n    - explain\n")
    assert judge.nodes["customer_asks_about_return_policy"].kind == "observation"


@pytest.mark.parametrize("example", EXAMPLES)
@pytest.mark.parametrize("kind", FORMATS)
def test_examples_round_trip(example, kind):
    sop = load_sop(ROOT / "examples" / example)
    text = export_tod(kind, sop)
    assert import_tod(kind, text) == sop  # export -> import: the same SOP
    again = import_tod(kind, text)
    assert export_tod(kind, again) == text  # export -> import -> export: the same text
    assert import_tod(kind, export_tod(kind, again)) == again  # import -> export -> import


@pytest.mark.parametrize("kind", FORMATS)
def test_cli_export_import(kind, tmp_path, capsys):
    out, back = tmp_path / "sop.txt", tmp_path / "sop.yaml"
    assert main(["export", kind, str(ROOT / "examples" / "internet_support"), "-o", str(out)]) == 0
    assert main(["import", kind, str(out), "-o", str(back)]) == 0
    assert main(["validate", str(back)]) == 0
    assert load_sop(back) == load_sop(ROOT / "examples" / "internet_support")
    capsys.readouterr()


@pytest.mark.parametrize(
    ("kind", "text", "message"),
    [
        ("tod_nested", "- If a:\n  - Go to nowhere\n", "'Go to nowhere' names no step"),
        ("tod_nested", "- a\n- Stop\n- b\n", "nothing may follow 'Stop'"),
        ("tod_flat", "    - orphan action\n", "an action comes before any 'If ...:' line"),
        ("tod_json", '{"what_to_do": 3}', 'expected {"what_to_do"'),
        ("tod_flat", "If a {{not json}}:\n    - b\n", "the annotation is not JSON"),
    ],
)
def test_errors_are_one_line(kind, text, message, tmp_path, capsys):
    with pytest.raises(SopError, match=message):
        import_tod(kind, text)
    bad = tmp_path / "bad.txt"
    bad.write_text(text)
    assert main(["import", kind, str(bad)]) != 0
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
