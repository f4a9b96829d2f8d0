"""The service-interruption SOP with a Check for each branching API step (issue 52): the
customer-service server declares each record's fields and values (``outputSchema``), the
catalog reads them, the tool-maker's grammar and the LLM-free search write field measures from
them, and the hand-written Checks walk every case on the pseudocode's path. No model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp.shared.memory import create_connected_server_and_client_session

from sopgraph.evals.service_interruption import CASES, evaluate
from sopgraph.evals.service_interruption_checks import decisions, labeled, write
from sopgraph.evals.toolmaker_eval import eval_spec_toolmaker
from sopgraph.graphs.loader import load_sop
from sopgraph.mcp_servers.customer_service import World, build_server, load_cases
from sopgraph.tools.toolmaker.session import MakeSession

NODES = ["authenticate_customer", "verify_customer_account", "check_area_outages",
         "assess_line_connection_status", "query_problem_resolution_status"]  # fmt: skip


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))


@pytest.fixture
def sop_dir(tmp_path: Path) -> Path:
    return write(tmp_path / "si_checks")


def test_each_branching_api_step_becomes_a_decision_node_with_a_check(sop_dir):
    sop = load_sop(sop_dir)
    assert list(decisions(json.loads(json.dumps(_raw())))) == NODES
    node = sop.nodes["authenticate_customer"]
    assert node.next.true == ["account_authentication_fails_advise_customer"]
    assert node.next.false == ["verify_customer_account"]
    assert node.data == ["customer_service.authenticate_customer"]
    code = (sop_dir / "tools" / "authenticate_customer" / "v2.py").read_text()
    assert "'field': 'authentication_status'" in code and "'equals': 'failed'" in code


def _raw():
    import yaml

    from sopgraph.evals.service_interruption import SOP_DIR

    return yaml.safe_load((SOP_DIR / "sop.yaml").read_text())


async def test_the_checks_walk_every_case_on_the_pseudocodes_path(sop_dir):
    results = await evaluate(sop_dir)
    assert len(results) == 38
    bad = [(r.case_id, r.apis, r.truth.apis) for r in results if not (r.path_ok and r.steps_ok)]
    assert not bad


def test_labels_are_the_pseudocodes_branch_and_both_splits_hold_both_verdicts():
    cases = json.loads(CASES.read_text())["cases"]
    rows = labeled(cases, decisions(_raw()))
    auth = {r["input"]["case_id"]: r["expected"] for r in rows["authenticate_customer"]}
    assert auth["leaf_01"] == "true" and auth["leaf_02"] == "false"  # true: it failed
    assert len(rows["verify_customer_account"]) == 37  # leaf_01 scripts no account check
    for node, node_rows in rows.items():
        for split in ("train", "eval"):
            got = {r["expected"] for r in node_rows if r["split"] == split}
            assert got == {"true", "false"}, (node, split)


async def test_the_server_declares_each_branching_record_and_refuses_an_undeclared_value(
    tmp_path,
):
    world = World(load_cases(CASES), str(CASES))
    async with create_connected_server_and_client_session(build_server(world)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        schema = tools["verify_customer_account"].outputSchema
        assert schema["properties"]["account_status"]["enum"] == [
            "active", "inactive due to unpaid bill",
        ]  # fmt: skip
        untyped = tools["check_outage_resolution_time"].outputSchema
        assert untyped["type"] == "object" and "properties" not in untyped  # no fields to name
        world.cases.cases["leaf_01"]["authenticate_customer"] = {"authentication_status": "maybe"}
        r = await client.call_tool("authenticate_customer", {"case_id": "leaf_01"})
    assert r.isError
    assert "scripts {'authentication_status': 'maybe'} for authenticate_customer" in (
        r.content[0].text
    )


async def test_the_llm_free_search_finds_each_check_from_the_declared_records(sop_dir):
    async with MakeSession(sop_dir, lm=None, judge_lm=None, model="none") as session:
        rows = await eval_spec_toolmaker(session, sop_dir / "cases", NODES, [], [0])
    assert [r["node"] for r in rows] == NODES
    assert all(r["config"] == "llm-free" and r["eval_pass"] == 1.0 for r in rows), rows
    assert all(0 < r["baseline_eval_acc"] < 1 for r in rows)  # the majority is no answer


ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "evals" / "model_results"
TAPES = ROOT / "tests" / "cassettes"


def _replay(tape: str, argv: list[str], home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOPGRAPH_")}
    env.update(SOPGRAPH_MODEL="local", SOPGRAPH_HOME=str(home),
               SOPGRAPH_CASSETTE=str(TAPES / tape), SOPGRAPH_CASSETTE_MODE="replay")  # fmt: skip
    proc = subprocess.run([sys.executable, "-m", "sopgraph", *argv, "--json"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


@pytest.mark.slow
@pytest.mark.parametrize(
    "run, flags, config",
    [("cold", [], "sop+d+r cold"), ("label_free", ["--label-free"], "sop+d+r cold label-free")],
)
def test_a_live_toolmaker_run_replays_to_its_published_rows(sop_dir, tmp_path, run, flags, config):
    """evals/model_results/toolmaker_service_interruption_{cold,label_free}.json: the same
    samples chosen by the same execution (label-free: by the same votes), row for row."""
    live = json.loads((RESULTS / f"toolmaker_service_interruption_{run}.json").read_text())
    out = _replay(
        f"toolmaker_service_interruption_{run}.jsonl",
        ["eval", "toolmaker", str(sop_dir), "--cases", str(sop_dir / "cases"),
         "--nodes", ",".join(NODES), "--configs", "sop+d+r", "--no-enumeration", *flags,
         "--demos", str(ROOT / "examples" / "fc_alarm_triage"), "--out", str(tmp_path / "out")],
        tmp_path / "home",
    )  # fmt: skip
    assert out["live"] is False
    same = ("node", "config", "passed", "eval_pass", "train_pass", "tokens", "spec")
    got = [{k: r.get(k) for k in same} for r in out["rows"]]
    assert got == [{k: r.get(k) for k in same} for r in live["rows"]]
    assert out["configs"][config]["nodes_passed"] == live["configs"][config]["nodes_passed"]


@pytest.mark.slow
def test_the_live_fallback_run_replays(sop_dir, tmp_path):
    """evals/model_results/fallback_service_interruption.json, replayed: the same verdicts."""
    live = json.loads((RESULTS / "fallback_service_interruption.json").read_text())
    out = _replay("fallback_service_interruption.jsonl", ["eval", "fallback", str(sop_dir)],
                  tmp_path / "home")  # fmt: skip
    assert out["per_node"] == live["per_node"] and out["tokens"] == live["tokens"]
    got = [(c["node"], c["input"]["case_id"], c["fallback"]) for c in out["cases"]]
    assert got == [(c["node"], c["input"]["case_id"], c["fallback"]) for c in live["cases"]]


async def test_a_label_free_make_tests_the_value_the_branches_state(sop_dir):
    """With no label to say which declared value makes the verdict true, samples that all test
    the first one (the 1.5B model's habit, measured on the fallback) would vote themselves
    right; each is set to the value the true branch states ("if account authentication
    fails"), so the kept Check passes the held-out cases it would otherwise all fail."""
    from dspy.utils import DummyLM

    from sopgraph.evals.toolmaker_eval import node_cases, spec_deps
    from sopgraph.tools.toolmaker.sampling import make_spec_tool, score_spec_heldout

    node = "authenticate_customer"
    wrong = {
        "value": "a",
        "measures": {"a": {"server": "customer_service", "tool": node,
                           "args": {"case_id": "$case_id"}, "field": "authentication_status",
                           "equals": "success"}},
        "scale": 1, "op": ">", "threshold": 0, "missing": "no_data",
    }  # fmt: skip
    lm = DummyLM([{"spec": wrong}] * 3)
    async with MakeSession(sop_dir, lm=lm, judge_lm=None, model="fake") as session:
        deps = await spec_deps(session, node, demos_from="none", program=None)
        train = node_cases(sop_dir / "cases", node, "train")
        held_out = node_cases(sop_dir / "cases", node, "eval")
        record = await make_spec_tool(deps, train, config="sop", samples=3, label_free=True)
        assert record.best.candidate.spec["measures"]["a"]["equals"] == "failed"
        assert all("true branch states 'failed'" in s.settled for s in record.rounds[0].samples)
        assert (await score_spec_heldout(deps, record, held_out)).eval_pass == 1.0
