"""The enterprise task set on the compiled path (the SOP and compiled tool calls, each as the
task's persona, over real stdio servers), and an SOP run refused access through the real CLI:
a distinct outcome (status ``refused``, exit 5), neither a crash nor a guess."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sopgraph.cli import main
from sopgraph.evals.enterprise_tasks import SOP_DIR, load_tasks, run_tasks, summary


async def test_task_set_on_the_compiled_path_per_category_and_persona(tmp_path, monkeypatch):
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path))
    tasks = load_tasks()
    wrong = {**tasks[0], "id": "wrong", "expected": {"outcome": "ok", "answer": 99}}
    results = await run_tasks([*tasks, wrong], tmp_path)
    by_id = {r["id"]: r for r in results}
    assert not by_id.pop("wrong")["correct"]  # a wrong expectation is caught
    table = summary(list(by_id.values()))
    assert table["category"] == {
        "search": [11, 11], "create_update_delete": [6, 6], "forbidden": [8, 8],
        "unanswerable": [3, 3],
    }  # fmt: skip
    assert table["path"] == {"call": [20, 20], "sop": [8, 8]}
    assert len(table["persona"]) == 6
    # refusals are the distinct outcome, with the server's reason, on both paths
    assert by_id["f01"]["got"]["outcome"] == "refused" and "Salary" in by_id["f01"]["got"]["why"]
    assert by_id["f04"]["path"] == "sop" and "may not close" in by_id["f04"]["got"]["why"]
    audit = [json.loads(x) for x in (tmp_path / "enterprise-audit.jsonl").read_text().splitlines()]
    assert sum(r["outcome"] == "refused" for r in audit) == 8


@pytest.mark.parametrize(
    ("persona", "inp", "node"),
    [
        (
            "emp_0675",
            {"type": "pay_check", "emp_id": "emp_0136", "amount": 100000},
            "obs_pay_above",
        ),
        ("emp_1178", {"type": "ticket_close", "ticket_id": "717"}, "act_close_ticket"),
    ],
)
def test_an_sop_node_refused_access_ends_the_run_refused(tmp_path, monkeypatch, capsys, persona, inp, node):  # fmt: skip
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path))
    monkeypatch.setenv("ENTERPRISE_AS", persona)
    code = main(["run", str(SOP_DIR), "--input", json.dumps(inp), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 5 and out["status"] == "refused"
    assert list(out["refused"]) == [node] and out["refused"][node].startswith("enterprise.")
    assert "access denied: " in out["refused"][node]
    step = out["trail"][-1]
    assert step["node"] == node and step["status"] == "refused" and step["fired"] == []
    assert "120301" not in json.dumps(out)  # the manager's pay
    assert not out["unresolved"]


def test_the_same_run_as_the_manager_is_answered(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path))
    monkeypatch.setenv("ENTERPRISE_AS", "emp_0106")
    inp = {"type": "pay_check", "emp_id": "emp_0136", "amount": 100000, "as": "emp_0675"}
    assert main(["run", str(SOP_DIR), "--input", json.dumps(inp), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verdicts"]["obs_pay_above"]["observed"] == 120301


def test_the_shipped_files_are_there():
    for name in ("employees.json", "it_tickets.json", "customers.json", "LICENSE", "README.md"):
        assert (Path(SOP_DIR) / "data" / name).is_file()
