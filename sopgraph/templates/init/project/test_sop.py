"""Runs the SOP on every labeled case in cases/ and checks the node's verdict: `pytest`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from sopgraph.runtime.runner import run_sop

HERE = Path(__file__).parent
CASES = [
    json.loads(line)
    for path in sorted((HERE / "cases").glob("*.jsonl"))
    for line in path.read_text(encoding="utf-8").splitlines()
    if line.strip()
]


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path))  # logs and checkpoints of the test runs


@pytest.mark.parametrize(
    "case", CASES, ids=[f"{c['node']}-{c['input']['order_id']}" for c in CASES]
)
def test_labeled_case(case):
    result = asyncio.run(run_sop(HERE, case["input"], checkpoint="memory"))
    assert result.status == "done", result.unresolved
    assert result.verdicts[case["node"]].value == case["expected"], case.get("why")


def test_a_small_delivered_order_is_refunded():
    inp = {"order_id": "A100", "region": "us", "timestamp": "2025-03-10T12:00:00Z"}
    result = asyncio.run(run_sop(HERE, inp, checkpoint="memory"))
    assert [a["node"] for a in result.actions] == ["act_refund"]
