"""sopgraph eval paths: balanced cases reach every leaf, path and leaf accuracy beside the
most-common baseline, and the engineering loop naming the node whose tool is wrong. Real CLI,
real scenario MCP server, compiled tools; the simulated customer's answers as labels."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from sopgraph.cli import main
from sopgraph.evals.dialogue_cases import balanced_cases, enumerate_paths
from sopgraph.graphs.loader import load_sop

ROOT = Path(__file__).resolve().parents[2]
UPGRADE = ROOT / "examples" / "abcd" / "manage_upgrade"
INTERNET = ROOT / "examples" / "internet_support"


@pytest.fixture(autouse=True)
def _home(monkeypatch, tmp_path):
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SOPGRAPH_MODEL", raising=False)


def test_cases_are_balanced_over_every_path_and_leaf():
    sop = load_sop(ROOT / "examples" / "abcd" / "return_size")
    cases, infeasible = balanced_cases(sop, per_path=3, seed=1)
    paths = enumerate_paths(sop)
    # gold's branch has no further check; each level's window, receipt, packaging branches
    assert len(paths) == 14 and len(infeasible) == 1
    per_path = Counter(id(c.path) for c in cases)
    assert set(per_path.values()) == {3} and len(per_path) == 13
    leaves = {n.id for n in sop.nodes.values() if n.is_action and not n.next.children()}
    # every action leaf, and the path where the intent's condition fails (no action)
    assert {c.path.leaf for c in cases} == leaves | {"wants-return"}


def test_a_failure_is_charged_to_the_decision_that_left_the_path():
    from sopgraph.evals.dialogue_eval import diverging_node

    # the intent's condition should not have held: the run went on past the path's end
    assert diverging_node(["wants-cancel"], ["wants-cancel", "pull-up-account"]) == "wants-cancel"
    # a branch taken wrongly: the last node both share
    assert diverging_node(["a", "b", "c"], ["a", "b", "x"]) == "b"
    assert diverging_node(["a", "b"], ["x"]) == "a"
    assert diverging_node(["a", "b"], ["a", "b"]) is None


def test_eval_paths_on_an_abcd_sop_and_the_sop_agent_example(capsys):
    assert main(["eval", "paths", str(UPGRADE), str(INTERNET), "--json"]) == 0
    upgrade, internet = json.loads(capsys.readouterr().out)
    assert (upgrade["cases"], upgrade["path_accuracy"], upgrade["leaf_accuracy"]) == (10, 1.0, 1.0)
    assert upgrade["baseline_path_accuracy"] == 0.4 and upgrade["failing_nodes"] == []
    assert (internet["cases"], internet["leaves"], internet["path_accuracy"]) == (18, 9, 1.0)
    assert internet["baseline_leaf_accuracy"] == round(2 / 18, 3)


def test_a_wrong_tool_is_ranked_first_by_the_engineering_loop(tmp_path, capsys):
    sop = tmp_path / "manage_upgrade"
    shutil.copytree(UPGRADE, sop)
    tool = sop / "tools" / "member-gold" / "v1.py"
    tool.write_text(tool.read_text().replace('one_of=("gold",)', 'one_of=("silver",)'))
    manifest = json.loads((sop / "tools" / "manifest.json").read_text())
    digest = hashlib.sha256(tool.read_bytes()).hexdigest()
    manifest["tools"]["member-gold"]["versions"]["1"]["sha256"] = digest
    (sop / "tools" / "manifest.json").write_text(json.dumps(manifest))
    assert main(["eval", "paths", str(sop), "--json"]) == 0
    (res,) = json.loads(capsys.readouterr().out)
    assert res["path_accuracy"] < 1.0
    assert res["failing_nodes"][0]["node"] == "member-gold"
    assert main(["eval", "paths", str(sop)]) == 0
    assert "fails at member-gold" in capsys.readouterr().out
