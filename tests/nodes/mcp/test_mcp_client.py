"""The MCP client pool: the lean stdio client against the SDK's, concurrency, dead servers."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from sopgraph.graphs.problems import SopError
from sopgraph.nodes.mcp import McpError, McpPool, ServerConfig, load_server_configs


async def test_a_server_that_fails_to_start_reports_its_last_error_line():
    crash = (
        "import sys; print('warming up', file=sys.stderr); sys.exit('error: no such database x.db')"
    )
    pool = McpPool({"metrics": ServerConfig(command=sys.executable, args=["-c", crash])})
    with pytest.raises(McpError) as info:
        await pool.start()
    assert str(info.value) == "cannot start MCP server 'metrics': no such database x.db"
    await pool.close()


async def test_unknown_server_name_lists_the_configured_ones():
    pool = McpPool({})
    await pool.start()
    with pytest.raises(McpError, match=r"unknown MCP server 'robotics' \(configured: none\)"):
        await pool.call("robotics", "list_metrics", {})
    await pool.close()


SOP = Path(__file__).resolve().parents[3] / "examples" / "service_interruption"


@pytest.fixture
def servers(tmp_path, monkeypatch):
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path))
    return load_server_configs(SOP)


async def _session_answers(pool: McpPool) -> list:
    out = []
    for case in ("leaf_01", "leaf_03"):
        for tool in ("authenticate_customer", "check_outage_resolution_time"):
            out.append(await pool.call("customer_service", tool, {"case_id": case}))
    with pytest.raises(McpError) as refused:
        await pool.call("customer_service", "authenticate_customer", {"case_id": "nope"})
    out.append(str(refused.value))
    out.append(sorted(t.name for t in await pool.list_tools("customer_service")))
    return out


async def test_lean_and_sdk_clients_answer_alike(servers):
    """The lean stdio client and the adapter's ClientSession see the same results and errors."""
    async with McpPool(servers) as lean, McpPool(servers, client="sdk") as sdk:
        got_lean, got_sdk = await _session_answers(lean), await _session_answers(sdk)
        assert set(lean.pids()) == {"customer_service"} and sdk.pids() == {}
    assert got_lean == got_sdk
    assert "customer_service.authenticate_customer failed: " in got_lean[-2]
    assert "unknown case 'nope'" in got_lean[-2]
    assert "get_call_log" in got_lean[-1]


async def test_concurrent_calls_on_one_server_each_get_their_own_answer(servers):
    async with McpPool(servers) as pool:
        calls = [
            (tool, f"combo_{i:02d}")
            for i in range(32)
            for tool in ("authenticate_customer", "check_outage_resolution_time")
        ]
        got = await asyncio.gather(
            *(pool.call("customer_service", t, {"case_id": c}) for t, c in calls)
        )
        one_by_one = [await pool.call("customer_service", t, {"case_id": c}) for t, c in calls]
    assert got == one_by_one
    assert len({repr(g) for g in got}) > 1  # answers differ, so a mix-up would show


async def test_a_server_killed_mid_run_fails_the_call_in_one_line(servers):
    async with McpPool(servers) as pool:
        pid = pool.pids()["customer_service"]
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(McpError) as info:
            for _ in range(50):  # the exit is noticed when its pipe closes
                await pool.call("customer_service", "authenticate_customer", {"case_id": "leaf_01"})
                await asyncio.sleep(0.05)
    assert str(info.value).startswith("customer_service.authenticate_customer failed: ")
    assert "\n" not in str(info.value)


def test_client_choice_is_checked():
    with pytest.raises(ValueError, match="lean or sdk"):
        McpPool({}, client="fast")


@pytest.mark.parametrize(
    "text,says",
    [
        ("servers: " + "[" * 1000 + "]" * 1000, ":1: -: nested more than 64 levels deep"),
        ("servers:\n  a: {command: 3}\n", ":2: -: server a.command: Input should be a valid str"),
        ("servers:\n  a: {url: 'http://x', bogus: 1}\n", ":2: -: server a.bogus: Extra inputs"),
        ("servers: 3\n", ":1: -: 'servers' must be a mapping of server names"),
        ("servers: [\n", "YAML syntax"),
    ],
)
def test_a_bad_mcp_yaml_is_one_error_line(tmp_path, text, says):
    """mcp.yaml is read with the SOP's own parser and limits: one error line, no traceback."""
    (tmp_path / "mcp.yaml").write_text(text)
    with pytest.raises(SopError) as info:
        load_server_configs(tmp_path)
    (problem,) = info.value.problems
    assert str(problem).startswith(f"error: {tmp_path / 'mcp.yaml'}:") and says in str(problem)
