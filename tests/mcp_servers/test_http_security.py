"""`sopgraph mcp serve --transport http` against careless and hostile clients (issue 23,
findings 2, 6 and 7a): no tokens configured, no token or a wrong one, JSON nested thousands
deep, and clients that come and go."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from sop_factory import make_sop

from sopgraph.nodes.ports import free_port

REPO = Path(__file__).resolve().parents[2]
GATED = {
    "id": "gated_demo",
    "entry": {"alarm": ["check"]},
    "nodes": {
        "check": {"kind": "observation", "text": "faulted", "next": {"true": ["act_restart"]}},
        "act_restart": {
            "kind": "action",
            "text": "Restart the robot.",
            "cost": "high",
            "approval": "required",
        },
    },
}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    make_sop(tmp_path / "sops" / "gated_demo", GATED, {"check": "return Verdict(value=True)"})
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "SOPGRAPH_HOME": str(home), "SOPGRAPH_SOPS": str(tmp_path / "sops")}
    env.pop("SOPGRAPH_MCP_TOKENS", None)
    return env


def _serve(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "sopgraph", "mcp", "serve", "--transport", "http"]
    cmd += ["--port", str(free_port()), *args]
    return subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=60)


def test_without_tokens_the_http_server_refuses_to_start(env, tmp_path):
    proc = _serve(env)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("error: ") and "--tokens FILE" in proc.stderr
    assert "SOPGRAPH_MCP_TOKENS" in proc.stderr
    weak = tmp_path / "weak-tokens"
    weak.write_text("alice hunter2\n")
    proc = _serve(env, "--tokens", str(weak))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert f"{weak}:1" in proc.stderr and "at least 32" in proc.stderr
    assert "hunter2" not in proc.stderr  # a secret is never printed
    helped = subprocess.run(
        [sys.executable, "-m", "sopgraph", "mcp", "serve", "--help"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
    )
    assert "--tokens" in helped.stdout and "sha256:<hex>" in " ".join(helped.stdout.split())


async def test_clients_need_a_valid_token_and_the_trail_names_its_identity(env, http_serve, tokens):
    server = http_serve(env)
    async with httpx.AsyncClient() as http:
        for auth in ({}, {"authorization": "Bearer " + "x" * 43}, {"authorization": "Basic x"}):
            r = await http.post(server.url, json=INITIALIZE, headers={**HEADERS, **auth})
            assert r.status_code == 401, (auth, r.text)
            assert r.headers["www-authenticate"].startswith("Bearer ")
    with pytest.raises(Exception):  # noqa: B017 - the SDK wraps the 401 in a task group
        async with server.session(None):
            pass
    async with server.session(tokens.by_identity["alice@example.com"]) as s:
        paused = (
            await s.call_tool("run_sop", {"sop_id": "gated_demo", "input": {}})
        ).structuredContent
        assert paused["status"] == "interrupted"
        gate = paused["pending"][0]["id"]
        answer = {"run_id": paused["run_id"], "decision": "approve", "interrupt_id": gate}
        done = await s.call_tool("resume_run", answer)
    (act,) = done.structuredContent["actions"]
    assert (act["approved"], act["by"], act["approver"]) == (True, "human", "alice@example.com")
    # bob's line holds only his token's SHA-256
    async with server.session(tokens.by_identity["bob"]) as s:
        got = await s.call_tool("get_run", {"run_id": paused["run_id"]})
        assert got.structuredContent["status"] == "done"


async def test_json_nested_thousands_deep_is_a_json_rpc_parse_error(env, http_serve, tokens):
    server = http_serve(env)
    bearer = {"authorization": f"Bearer {tokens.by_identity['alice@example.com']}"}
    async with httpx.AsyncClient(timeout=60) as http:
        for depth in (3_000, 100_000):
            body = "[" * depth + "]" * depth
            r = await http.post(server.url, content=body, headers={**HEADERS, **bearer})
            assert r.status_code == 400, r.text
            error = r.json()["error"]
            assert error["code"] == -32700 and "nested" in error["message"], error
        # inside a request, and never closed
        deep = json.dumps(INITIALIZE)[:-1] + ', "x": ' + '{"a": ' * 5_000
        r = await http.post(server.url, content=deep, headers={**HEADERS, **bearer})
        assert r.status_code == 400 and r.json()["error"]["code"] == -32700
        # an unauthenticated client's body is not even read
        r = await http.post(server.url, content="[" * 3_000, headers=HEADERS)
        assert r.status_code == 401
    async with server.session(tokens.by_identity["alice@example.com"]) as s:
        assert len((await s.list_tools()).tools) == 5  # the server serves on
    server.stop()
    log = server.stderr()
    assert "Traceback" not in log and "RecursionError" not in log, log


async def test_client_disconnects_log_one_warning_at_most(env, http_serve, tokens):
    server = http_serve(env)
    for _ in range(8):
        async with server.session(tokens.by_identity["bob"]) as s:
            await s.list_tools()
    server.stop()
    log = server.stderr()
    assert "Traceback" not in log and "ERROR" not in log, log
    assert log.count("WARNING") <= 1 and log.count("ClosedResourceError") <= 1, log
