"""``evals/draft_tools``: service_interruption's prose drafted with its catalog becomes an SOP
folder whose drafted decisions have labeled cases, each labelled by the branch the imported
SOP takes, through the drafted decision's own ``true`` branch."""

from __future__ import annotations

import json

from sopgraph.evals.draft_tools import write
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
