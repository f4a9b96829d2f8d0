"""`sopgraph eval fallback` on the `sopgraph init` project, with a scripted model (DummyLM).

The fallback decides each labeled case's node from the Checks it samples; its accuracy is
scored against the labels beside the compiled tools' and each node's majority label.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dspy.utils import DummyLM
from model_env import clean_env  # noqa: F401 - the autouse fixture

from sopgraph.cli import main
from sopgraph.commands.init import init_project
from sopgraph.evals.fallback_eval import eval_fallback
from sopgraph.tools.registry import Registry
from sopgraph.tools.toolmaker.demos import canonical


@pytest.fixture
def project(tmp_path):
    init_project(tmp_path / "shop")
    return tmp_path / "shop"


def spec_of(project, node: str) -> dict:
    return canonical(Registry(project / "tools").resolve(node).fn.spec.to_dict())


def test_the_fallback_is_scored_beside_the_tools_and_the_majority(project, tmp_path):
    # wrong at exactly 100; the threshold written as the number, not as {max_auto_refund}, which
    # the text compares with "above" and which would set the operator to >
    amount = {**spec_of(project, "ct_amount_over_limit"), "op": ">=", "threshold": 100}
    # the grammar's form has no measure-level `missing`: no delivery is the Check's own false
    window = {**spec_of(project, "obs_within_return_window"), "missing": "false"}
    lm = DummyLM([{"spec": amount}, {"spec": window}])  # drawn once a node, in the cases' order
    out = asyncio.run(eval_fallback(project, lm, "fake", tmp_path / "work", samples=1))
    assert out["n"] == 24 and out["unresolved"] == 0, out["cases"][0]["why"]
    amt, win = out["per_node"]["ct_amount_over_limit"], out["per_node"]["obs_within_return_window"]
    assert (amt["cases"], amt["fallback"], amt["tool"]) == (10, 9, 10)  # A105: 100 >= 100
    assert (win["cases"], win["fallback"], win["tool"]) == (14, 14, 14)
    assert (amt["majority_label"], amt["majority"]) == ("false", 6)
    assert (win["majority_label"], win["majority"]) == ("true", 9)
    assert out["fallback_accuracy"] == round(23 / 24, 4) and out["tool_accuracy"] == 1.0
    assert out["majority_accuracy"] == round(15 / 24, 4)
    wrong = [r for r in out["cases"] if r["fallback"] != r["expected"]]
    assert [r["input"]["order_id"] for r in wrong] == ["A105"]
    assert len(lm.history) == 2  # two draws serve all 24 cases
    # the candidates land in the copy, inactive; the project itself is untouched
    assert sorted(out["candidates"]) == ["ct_amount_over_limit:2", "obs_within_return_window:2"]
    assert Registry(tmp_path / "work" / "tools").entry("ct_amount_over_limit").active == 1
    assert [
        v.version for v in Registry(project / "tools").entry("ct_amount_over_limit").versions
    ] == [1]


def test_without_a_model_or_cases_it_says_so_in_one_line(project, capsys):
    assert main(["eval", "fallback", str(project)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "set SOPGRAPH_MODEL" in err
    assert main(["eval", "fallback", str(project / "cases")]) == 2
    assert "no sop.yaml" in capsys.readouterr().err


def test_a_malformed_case_names_its_line(project, tmp_path):
    (project / "cases" / "ct_amount_over_limit.jsonl").write_text('{"node": "nope", "input": {}}\n')
    with pytest.raises(ValueError, match=r"ct_amount_over_limit.jsonl:1: 'nope' is not a decision"):
        asyncio.run(eval_fallback(project, DummyLM([]), "fake", tmp_path / "work"))


def test_the_live_run_on_the_init_project_replays(project, tmp_path):
    """evals/model_results/fallback_init.json, replayed from its cassette: same answers."""
    root = Path(__file__).resolve().parents[2]
    live = json.loads((root / "evals" / "model_results" / "fallback_init.json").read_text())
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOPGRAPH_")}
    env.update(SOPGRAPH_MODEL="local", SOPGRAPH_HOME=str(tmp_path / "home"),
               SOPGRAPH_CASSETTE=str(root / "tests" / "cassettes" / "fallback_init.jsonl"),
               SOPGRAPH_CASSETTE_MODE="replay")  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "sopgraph", "eval", "fallback", str(project), "--json"],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["per_node"] == live["per_node"] and out["tokens"] == live["tokens"]
    got = [(c["node"], c["input"]["order_id"], c["fallback"]) for c in out["cases"]]
    assert got == [(c["node"], c["input"]["order_id"], c["fallback"]) for c in live["cases"]]
    assert out["fallback_accuracy"] == live["fallback_accuracy"] and out["tool_accuracy"] == 1.0
