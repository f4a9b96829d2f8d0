"""The imported service-interruption SOP follows the paper's ground-truth path on every case.

Ground truth is the pseudocode walked directly; runs go through the compiled graph, the
compiled tools and the real customer-service MCP server (stdio), with no LLM.
"""

from __future__ import annotations

import json
import runpy
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.memory import create_connected_server_and_client_session

from sopgraph.evals.service_interruption import (
    CASES,
    PSEUDOCODE,
    SOP_DIR,
    all_combinations,
    evaluate,
    ground_truth,
    leaf_cases,
    path_matches,
    read_call_log,
    read_tree,
    steps_match,
)
from sopgraph.mcp_servers.customer_service import World, build_server, load_cases
from sopgraph.nodes.ports import free_port
from sopgraph.runtime.runner import run_sop

ROOT = Path(__file__).resolve().parents[2]
BASE = ["ServiceInterruptionHandle", "authenticate_customer"]


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))


def test_ground_truth_walks_the_pseudocode():
    tree = read_tree()
    failed = ground_truth(tree, {"authenticate_customer": {"authentication_status": "failed"}})
    assert failed.apis == BASE
    assert failed.descriptions[-1].startswith("if account authentication fails")
    persists = ground_truth(
        tree,
        {
            "authenticate_customer": {"authentication_status": "success"},
            "verify_customer_account": {"account_status": "active"},
            "check_area_outages": {"outage_status": "none"},
            "assess_line_connection_status": {"connection_status": "operational"},
            "query_problem_resolution_status": {"problem_status": "persists"},
        },
    )
    assert persists.apis == [
        *BASE,
        "verify_customer_account",
        "check_area_outages",
        "assess_line_connection_status",
        "check_interruption_troubleshooting_guide",
        "query_problem_resolution_status",
        "escalate_issue_to_technical_support",
    ]
    assert path_matches(persists, persists.apis)
    assert not path_matches(persists, persists.apis[:-1])
    assert not steps_match(failed, persists.descriptions)


def test_cases_cover_every_branch_and_every_combination():
    tree = read_tree()
    leaves = [ground_truth(tree, c) for c in leaf_cases(tree)]
    assert len(leaves) == 6 and len(set(leaves)) == 6  # one case per root-to-leaf path
    combos = all_combinations(tree)
    assert len(combos) == 2**5  # five tested API outputs, two tested values each
    assert {ground_truth(tree, c) for c in combos} == set(leaves)
    cases = json.loads(CASES.read_text())["cases"]
    assert len(cases) == 6 + 32


def test_example_files_are_up_to_date():
    build = runpy.run_path(str(SOP_DIR / "build.py"))
    assert build["stale"](SOP_DIR) == [], "run python examples/service_interruption/build.py"


def _world(tmp_path: Path) -> World:
    return World(load_cases(CASES), str(CASES), call_log=tmp_path / "calls.jsonl")


async def test_server_has_one_tool_per_api_with_descriptions(tmp_path):
    apis = {n.api for n in _walk(read_tree()) if n.api}
    async with create_connected_server_and_client_session(build_server(_world(tmp_path))) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == apis | {"get_call_log"}
    for name, tool in tools.items():
        assert tool.description and tool.inputSchema["required"] == ["case_id"], name
        assert tool.annotations.readOnlyHint is (name != "escalate_issue_to_technical_support")


def _walk(step):
    return [step, *(s for c in step.children for s in _walk(c))]


async def test_server_returns_scripted_outcomes_and_logs_calls(tmp_path):
    world = _world(tmp_path)
    async with create_connected_server_and_client_session(build_server(world)) as client:
        r = await client.call_tool("authenticate_customer", {"case_id": "leaf_01"})
        assert r.structuredContent == {"authentication_status": "failed"}
        r = await client.call_tool("check_outage_resolution_time", {"case_id": "leaf_01"})
        assert r.structuredContent == {"estimated_resolution_time": "4 hours"}  # a default
        r = await client.call_tool("verify_customer_account", {"case_id": "leaf_01"})
        assert r.isError and "scripts no outcome for verify_customer_account" in r.content[0].text
        r = await client.call_tool("authenticate_customer", {"case_id": "nope"})
        assert r.isError and "unknown case 'nope'" in r.content[0].text
        log = await client.call_tool("get_call_log", {"case_id": "leaf_01"})
    # The refused call is on the path too; the unknown case is not.
    called = ["authenticate_customer", "check_outage_resolution_time", "verify_customer_account"]
    assert [c["api"] for c in log.structuredContent["result"]] == called
    assert log.structuredContent["result"][-1]["result"] is None
    assert read_call_log(tmp_path / "calls.jsonl") == {"leaf_01": called}


async def test_server_over_streamable_http():
    port = free_port()
    cmd = [sys.executable, "-m", "sopgraph.mcp_servers.customer_service", "--cases", str(CASES)]
    proc = subprocess.Popen(
        [*cmd, "--transport", "streamable-http", "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, "server did not start"
                time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/mcp"
        async with (
            streamable_http_client(url) as (read, write, _),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            r = await client.call_tool("check_area_outages", {"case_id": "leaf_03"})
        assert r.structuredContent == {"outage_status": "outage reported"}
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_server_refuses_a_missing_cases_file(tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "sopgraph.mcp_servers.customer_service",
        "--cases",
        str(tmp_path / "x.json"),
    ]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: {tmp_path / 'x.json'}: no such cases file; pass --cases or set CUSTOMER_SERVICE_CASES"
    ]


@pytest.mark.slow
async def test_every_combination_follows_the_ground_truth_path():
    results = await evaluate(SOP_DIR)
    assert len(results) == 38
    for r in results:
        assert r.status == "done", r.case_id
        assert r.apis == r.truth.apis, f"{r.case_id}: called {r.apis}, ground truth {r.truth.apis}"
        assert r.node_texts == r.truth.descriptions, r.case_id
        assert r.path_ok and r.leaf_ok and r.steps_ok
    assert len({r.truth for r in results}) == 6


async def test_run_sop_on_one_case_through_the_real_server(tmp_path):
    result = await run_sop(SOP_DIR, {"type": "default", "case_id": "leaf_06"})
    assert result.status == "done"
    assert result.path[-1] == "escalate_issue_to_technical_support_2"
    assert result.verdicts["assess_line_connection_status"].observed == {
        "connection_status": "interruption_detected"
    }
    assert result.actions[-1]["result"] == {"ticket_status": "opened"}
    calls = read_call_log(tmp_path / "home" / "customer_service_calls.jsonl")["leaf_06"]
    assert calls == ground_truth(read_tree(), load_cases(CASES).cases["leaf_06"]).apis


async def test_a_wrongly_imported_sop_is_caught(tmp_path):
    # The same example with the authentication branches swapped: the comparison must fail.
    broken = tmp_path / "broken"
    shutil.copytree(SOP_DIR, broken, ignore=shutil.ignore_patterns("__pycache__"))
    sop = (broken / "sop.yaml").read_text()
    swapped = sop.replace("value: failed}", "value: @@}").replace(
        "value: success}", "value: failed}"
    )
    (broken / "sop.yaml").write_text(swapped.replace("value: @@}", "value: success}"))
    results = await evaluate(broken, case_ids=["leaf_01", "leaf_02"])
    assert [r.path_ok for r in results] == [False, False]
    # It went on after a failed authentication (the server refused: leaf_01 scripts no
    # account status), and stopped after a successful one.
    assert results[0].apis == [*BASE, "verify_customer_account"]
    assert results[1].apis == BASE
    assert not results[0].steps_ok and not results[1].steps_ok
    assert PSEUDOCODE.read_text() == (broken / "sop_agent.yaml").read_text()
