"""The second test domain, ``shipment_hold``: a point-score rule over numbers its tools return
as strings. Its labels are recomputed here from the CSV with the SOP's rule, its boundaries are
checked to matter, and its tools are called through the real tool server."""

from __future__ import annotations

import csv
import operator
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest

from sopgraph.evals.sopbench.answer_schema import allowed_values, answer_schema
from sopgraph.evals.sopbench.domain import load_domain
from sopgraph.evals.sopbench.server import server_config
from sopgraph.nodes.mcp import McpError, McpPool

HOLD = Path(__file__).parents[1] / "data" / "sopbench" / "shipment_hold"
VALUES = ["Release", "Hold for Review", "Block"]

# the SOP's comparisons, by name, so that a test can swap one for its wrong twin
RULE = {
    "weight_high": operator.gt,  # more than 8 percent: 2 points
    "weight_low": operator.ge,  # at least 4 percent: 1 point
    "violations_high": operator.ge,  # at least 3: 2 points
    "violations_low": operator.ge,  # at least 1: 1 point
    "young_account": operator.lt,  # less than 60 days: 1 point
    "block": operator.ge,  # at least 4 points
    "hold": operator.ge,  # at least 2 points
}
WRONG_TWIN = {operator.gt: operator.ge, operator.ge: operator.gt, operator.lt: operator.le}


def rows() -> list[dict[str, str]]:
    with (HOLD / "test_set_with_outputs.csv").open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def decide(row: dict[str, str], cmp: dict = RULE, number=Fraction) -> str:
    """The SOP's rule, written again from its text; ``number`` reads the CSV's strings."""
    if row["shipment_found"] != "yes":
        return "Block"
    declared, scanned = number(row["declared_weight_kg"]), number(row["scanned_weight_kg"])
    discrepancy = abs(scanned - declared) / declared * 100
    points = 0
    if cmp["weight_high"](discrepancy, 8):
        points += 2
    elif cmp["weight_low"](discrepancy, 4):
        points += 1
    violations = int(row["prior_violations"])
    if cmp["violations_high"](violations, 3):
        points += 2
    elif cmp["violations_low"](violations, 1):
        points += 1
    if cmp["young_account"](int(row["account_age_days"]), 60):
        points += 1
    if cmp["block"](points, 4):
        return "Block"
    return "Hold for Review" if cmp["hold"](points, 2) else "Release"


def test_domain_loads_with_its_columns_tools_and_the_sop_values():
    d = load_domain(HOLD)
    assert [t.name for t in d.tools] == ["getShipment", "getScan", "getCustomerRecord"]
    assert (d.input_columns, d.output_columns) == (
        ["shipment_id", "carrier_note"],
        ["hold_decision"],
    )
    assert len(d.tasks) == 12
    assert [t.inputs["shipment_id"] for t in d.tasks] == [f"S_{i:03d}" for i in range(1, 13)]
    for task in d.tasks:
        assert set(task.inputs) == {"shipment_id", "carrier_note"}  # no weights, no answer
    assert allowed_values(d.sop_text, "hold_decision") == VALUES
    schema = answer_schema(d).model_json_schema()
    assert schema["properties"]["hold_decision"]["enum"] == VALUES
    assert "<hold_decision>" in d.sop_text


def test_every_label_is_what_the_sop_rule_gives_and_labels_are_spread():
    table = rows()
    assert [decide(r) for r in table] == [r["hold_decision"] for r in table]
    counts = Counter(r["hold_decision"] for r in table)
    assert counts == {"Release": 4, "Hold for Review": 4, "Block": 4}
    assert max(counts.values()) <= 5
    assert [r["shipment_id"] for r in table if r["shipment_found"] != "yes"] == ["S_008"]
    # an agent computing in floats (the strings parsed as float) reaches the same labels
    assert [decide(r, number=float) for r in table] == [r["hold_decision"] for r in table]


@pytest.mark.parametrize("name", sorted(RULE))
def test_each_boundary_changes_a_label_when_its_comparison_is_wrong(name):
    wrong = dict(RULE, **{name: WRONG_TWIN[RULE[name]]})
    table = rows()
    assert [decide(r, wrong) for r in table] != [r["hold_decision"] for r in table]


def test_the_tool_strings_compared_as_text_would_misjudge_some_tasks():
    # "400" < "60" as text: an agent that compares the raw strings gets the rule wrong
    found = [r for r in rows() if r["shipment_found"] == "yes"]
    as_text = [r["account_age_days"] < "60" for r in found]
    assert as_text != [int(r["account_age_days"]) < 60 for r in found]


@pytest.mark.slow
async def test_tools_return_the_csv_strings_through_the_tool_server():
    domain = load_domain(HOLD)
    async with McpPool({"sopbench": server_config(domain.path)}) as pool:
        tools = await pool.list_tools("sopbench")
        assert [t.name for t in tools] == ["getShipment", "getScan", "getCustomerRecord"]
        got = await pool.call("sopbench", "getShipment", {"shipment_id": "S_005"})
        assert got == {
            "shipment_id": "S_005",
            "declared_weight_kg": "12.5",
            "destination_country": "BR",
        }
        scan = await pool.call("sopbench", "getScan", {"shipment_id": "S_005"})
        assert scan == {"shipment_id": "S_005", "scanned_weight_kg": "14.1"}
        record = await pool.call("sopbench", "getCustomerRecord", {"shipment_id": "S_003"})
        assert record == {
            "shipment_id": "S_003",
            "prior_violations": "3",
            "account_age_days": "500",
        }
        with pytest.raises(McpError, match="No shipment found for shipment_id S_008"):
            await pool.call("sopbench", "getShipment", {"shipment_id": "S_008"})
