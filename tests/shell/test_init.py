"""`sopgraph init DIR`: a project that validates, runs, takes a hand-written tool and passes its
own test with no file edited by hand (issue 27, finding 2)."""

import json
from pathlib import Path

import pytest

from sopgraph.cli import main

SMALL = {"order_id": "A100", "region": "us", "timestamp": "2025-03-10T12:00:00Z"}
LARGE = {"order_id": "A101", "region": "us", "timestamp": "2025-03-10T12:00:00Z"}
LATE_EU = {"order_id": "A102", "region": "eu", "timestamp": "2025-03-10T12:00:00Z"}

# What a user writes for a node: the contract, read through the project's data server.
HAND_WRITTEN = """\
from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import sql


async def run(input, ctx):
    rows = await sql(ctx, "shop", "SELECT amount FROM orders WHERE order_id = ?", input["order_id"])
    if not rows:
        return Verdict(value="no_data", explanation="hand-written: no such order")
    amount, limit = rows[0][0], ctx.params["max_auto_refund"]
    return Verdict(value=amount > limit, observed=amount, threshold=limit,
                   explanation="hand-written")
"""


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"


def cli(capsys, *argv) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def run_json(capsys, project: Path, inp: dict) -> dict:
    rc, out, err = cli(
        capsys, "run", project, "--input", json.dumps(inp), "--json", "--checkpoint", "memory"
    )
    assert rc == 0, err
    return json.loads(out)


def test_init_validates_runs_and_takes_a_hand_written_tool(home, tmp_path, capsys):
    project = tmp_path / "demo-sop"
    rc, out, err = cli(capsys, "init", project)
    assert (rc, err) == (0, "")
    assert f"sopgraph validate {project}" in out and f"sopgraph run {project}" in out
    manifest = json.loads((project / "tools" / "manifest.json").read_text())
    assert {n: t["active"] for n, t in manifest["tools"].items()} == {
        "obs_within_return_window": 1,
        "ct_amount_over_limit": 1,
    }

    rc, out, err = cli(capsys, "validate", project)
    assert rc == 0 and out.startswith("ok: refund_request v1: 2 decision nodes, 3 action nodes")
    assert "warning" not in err

    small = run_json(capsys, project, SMALL)
    assert small["status"] == "done"
    assert [a["node"] for a in small["actions"]] == ["act_refund"]
    assert small["verdicts"]["obs_within_return_window"]["observed"] == 7.0
    late = run_json(capsys, project, LATE_EU)  # params/eu.yaml: a 14-day window
    assert [a["node"] for a in late["actions"]] == ["act_decline_refund"]
    assert late["verdicts"]["obs_within_return_window"]["threshold"] == 14

    # a hand-written tool for a node: registered, promoted, and it is what runs
    mine = tmp_path / "amount.py"
    mine.write_text(HAND_WRITTEN)
    rc, out, err = cli(capsys, "tools", "add", project, "ct_amount_over_limit", mine)
    assert rc == 0 and "v2 registered" in out and "tools promote" in out, err
    assert cli(capsys, "tools", "promote", project, "ct_amount_over_limit", "2")[0] == 0
    rc, out, _ = cli(capsys, "tools", "list", project)
    row = next(x for x in out.splitlines() if x.startswith("ct_amount_over_limit"))
    assert row.split()[:4] == ["ct_amount_over_limit", "v2", "1,2", "human"] and row.endswith("ok")
    large = run_json(capsys, project, LARGE)
    ct = large["verdicts"]["ct_amount_over_limit"]
    assert (ct["value"], ct["observed"], ct["explanation"]) == ("true", 480.0, "hand-written")
    assert [a["node"] for a in large["actions"]] == ["act_escalate_to_lead"]


def test_init_refuses_a_folder_that_is_not_empty(tmp_path, capsys):
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    rc, out, err = cli(capsys, "init", taken)
    assert rc == 2 and out == ""
    assert err.strip().splitlines() == [
        f"error: {taken}: the folder is not empty; give a new or empty folder for the project"
    ]
    assert [p.name for p in taken.iterdir()] == ["notes.txt"]

    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli(capsys, "init", empty)[0] == 0 and (empty / "sop.yaml").is_file()
