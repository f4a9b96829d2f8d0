"""``evals/draft_tools``: service_interruption's prose drafted with its catalog becomes an SOP
folder whose drafted decisions have labeled cases, each labelled by the branch the imported
SOP takes, through the drafted decision's own ``true`` branch."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sopgraph.evals.draft_tools import compare, majority_copy, write
from sopgraph.evals.service_interruption import CASES
from sopgraph.graphs.loader import load_sop


def test_the_drafted_decisions_get_cases_labelled_by_their_own_branches(tmp_path):
    out = tmp_path / "sop"
    mapped, left = write(out)
    assert mapped == {
        "s4_authenticate_customer_s_identity": "authenticate_customer",
        "s6_account_authentication_successful_verify": "verify_customer_account",
        "s8_account_active_check_known": "check_area_outages",
        "s11_there_no_outage_proceed": "assess_line_connection_status",
        "s13_after_troubleshooting_ask_customer": "query_problem_resolution_status",
    }
    assert left == ["s1_this_procedure_customer_service"]  # the opening statement: no data
    sop = load_sop(out / "sop.yaml")  # a valid SOP with its input and data hints
    assert "case_id" in sop.input
    scripted = json.loads(CASES.read_text())["cases"]
    node = "s4_authenticate_customer_s_identity"
    # its true branch is "If account authentication is successful, ...": true on success
    assert sop.nodes[node].next.true == ["s6_account_authentication_successful_verify"]
    rows = [json.loads(line) for line in (out / "cases" / f"{node}.jsonl").open()]
    assert rows and {r["split"] for r in rows} == {"train", "eval"}
    for r in rows:
        status = scripted[r["input"]["case_id"]]["authenticate_customer"]["authentication_status"]
        assert r["expected"] == ("true" if status == "success" else "false"), r


ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_live_tool_making_on_the_drafted_nodes_replays(tmp_path, monkeypatch):
    """evals/model_results/toolmaker_drafted_service_interruption.json (docs/drafting.md): the
    tool-maker, label-free, on the 5 drafted decisions: the same samples, the same votes, the
    same kept Checks, row for row."""
    out = tmp_path / "sop"
    mapped, _ = write(out)
    live = json.loads((ROOT / "evals/model_results/toolmaker_drafted_service_interruption.json")
                      .read_text())  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOPGRAPH_")}
    env.update(SOPGRAPH_MODEL="local", SOPGRAPH_HOME=str(tmp_path / "home"),
               SOPGRAPH_CASSETTE=str(ROOT / "tests/cassettes/toolmaker_drafted_service_interruption.jsonl"),
               SOPGRAPH_CASSETTE_MODE="replay")  # fmt: skip
    argv = ["eval", "toolmaker", str(out), "--cases", str(out / "cases"), "--configs", "sop+d+r",
            "--label-free", "--demos", str(ROOT / "examples/fc_alarm_triage"), "--nodes",
            ",".join(mapped), "--out", str(tmp_path / "made"), "--json",
            "--register-into", str(tmp_path / "registered")]  # fmt: skip
    proc = subprocess.run([sys.executable, "-m", "sopgraph", *argv], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout)
    assert got["live"] is False
    same = ("node", "config", "passed", "eval_pass", "train_pass", "tokens", "spec")
    assert [{k: r.get(k) for k in same} for r in got["rows"]] == [
        {k: r.get(k) for k in same} for r in live["rows"]
    ]
    assert got["configs"]["sop+d+r cold +enum label-free"]["nodes_passed"] == sorted(mapped)
    # the drafted graph, run with the made tools (no model), visits the hand-written graph's
    # steps in its order on every scripted case, each run ending in a stated outcome
    made = tmp_path / "registered"
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "runs"))
    rows = asyncio.run(compare(made))
    assert len(rows) == 38 and all(r["same"] and r["status"] == "done" for r in rows)
    assert all(str(r["drafted"][-1]).startswith("answer_") for r in rows)
    # the trivial baseline, each decision its training majority: 2 of 38
    base = majority_copy(out, made, tmp_path / "majority")
    assert sum(bool(r["same"]) for r in asyncio.run(compare(base))) == 2
    # and it can tell: with the authentication step's branches swapped, the cases differ
    text = (made / "sop.yaml").read_text()
    swapped = text.replace("      'true':\n      - s6_", "      'false':\n      - s6_").replace(
        "      'false':\n      - s5_", "      'true':\n      - s5_")  # fmt: skip
    assert swapped != text
    (made / "sop.yaml").write_text(swapped)
    assert not any(r["same"] for r in asyncio.run(compare(made)))
