"""sopgraph's MCP server uses the configured model as `sopgraph run` does (issue 23, finding 8):
a node whose tool fails falls back to the CodeAct sub-agent. The model is an OpenAI-compatible
endpoint on loopback (``tests/fake_chat.FakeChatServer``) that the server process calls."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from fake_chat import FakeChatServer
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from sop_factory import make_sop

REPO = Path(__file__).resolve().parents[2]
SOP = {
    "id": "faulted_robot",
    "entry": {"alarm": ["obs_robot_faulted"]},
    "nodes": {
        "obs_robot_faulted": {
            "kind": "observation",
            "text": "Robot r1 reports a fault.",
            "data": ["robotics.robot_faults"],  # data to query: CodeAct's, not the judge's
            "next": {"true": ["act_notify"]},
        },
        "act_notify": {"kind": "action", "text": "Notify the shift lead."},
    },
}
BROKEN_TOOL = 'raise RuntimeError("metrics store unreachable")'


@pytest.fixture
def model() -> Iterator[FakeChatServer]:
    # The CodeAct sub-agent's first reply states its verdict: no code to run.
    server = FakeChatServer(lambda body, n: "ANSWER: r1 reports fault E42.\nVERDICT: true")
    yield server
    server.close()


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    make_sop(tmp_path / "sops" / "faulted_robot", SOP, {"obs_robot_faulted": BROKEN_TOOL})
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SOPGRAPH_", "OPENAI_"))}
    return {**env, "SOPGRAPH_HOME": str(home), "SOPGRAPH_SOPS": str(tmp_path / "sops")}


@asynccontextmanager
async def _session(env: dict[str, str], cwd: Path):
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "sopgraph", "mcp", "serve"], env=env, cwd=str(cwd)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        yield s


async def _run(env: dict[str, str], cwd: Path) -> dict:
    async with _session(env, cwd) as s:
        result = await s.call_tool("run_sop", {"sop_id": "faulted_robot", "input": {}})
    assert not result.isError, result.content
    return result.structuredContent


async def test_a_failing_tool_falls_back_to_codeact_with_the_configured_model(env, model, tmp_path):
    configured = {
        **env,
        "SOPGRAPH_MODEL": "openai:fake-coder",
        "SOPGRAPH_BASE_URL": model.base_url,
        "SOPGRAPH_API_KEY": "unused",
    }
    run = await _run(configured, tmp_path)
    assert run["status"] == "done" and not run["unresolved"], run
    assert run["verdicts"]["obs_robot_faulted"]["value"] == "true"
    assert run["path"] == ["obs_robot_faulted", "act_notify"]
    # the server asked the configured model, with the node's question
    assert model.requests and model.requests[0]["model"] == "fake-coder"
    assert "Robot r1 reports a fault." in json_text(model.requests[0])


async def test_without_a_model_the_node_stays_open_as_before(env, model, tmp_path):
    run = await _run(env, tmp_path)
    assert run["status"] == "unresolved"
    reason = run["unresolved"]["obs_robot_faulted"]
    assert "metrics store unreachable" in reason and "set SOPGRAPH_MODEL" in reason
    assert model.requests == []


def json_text(body: dict) -> str:
    return " ".join(str(m.get("content")) for m in body.get("messages", []))
