"""The real SmolLM2-135M drives the CodeAct loop end to end, its answer read by the DSPy verdict
extractor (the extractor alone, live on Qwen: tests/nodes/models/test_qwen_live.py).

Plumbing, not wisdom: a 135M model writes poor code, so the assertions are that every turn is
well-formed and accounted for, failures are handled, and the node ends in a verdict or in a
clear one-line reason. The MCP server is the alarm-triage robotics server over the session's
built world (tests/fc_world.py).
"""

from __future__ import annotations

import sys

import pytest
import pytest_asyncio
from fc_world import fc_world  # noqa: F401

from sopgraph.graphs.executors import ToolContext
from sopgraph.graphs.model import Node
from sopgraph.nodes.codeact import CodeActExecutor
from sopgraph.nodes.mcp import McpPool, ServerConfig
from sopgraph.nodes.models import (
    LocalModelServer,
    LocalModelUnavailable,
    Settings,
    chat_model,
    dspy_lm,
    ensure_installed,
)
from sopgraph.prompts.verdict import VerdictExtractor

pytestmark = [pytest.mark.local_llm, pytest.mark.asyncio(loop_scope="module")]

try:
    ensure_installed("smollm2")
except LocalModelUnavailable as exc:
    pytest.skip(str(exc), allow_module_level=True)

QUESTION = "The alarmed induct station was idle more than 25% of the time over the last 15 minutes."


@pytest.fixture(scope="module")
def local() -> Settings:
    with LocalModelServer(model="smollm2") as server:
        print(f"\nlocal model server started in {server.startup_seconds:.2f} s ({server.base_url})")
        yield Settings(model="local:smollm2", base_url=server.base_url, max_tokens=256)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pool(fc_world):  # noqa: F811
    args = ["-m", "sopgraph.mcp_servers.robotics_metrics", "--db", str(fc_world.robotics)]
    async with McpPool({"robotics": ServerConfig(command=sys.executable, args=args)}) as p:
        yield p


def _ctx(node: Node, pool: McpPool) -> ToolContext:
    alarm = {
        "type": "station_idle",
        "site": "BFI4",
        "station": "ST03",
        "timestamp": "2025-03-03T04:20:59Z",
    }
    return ToolContext(
        node_id=node.id, text=node.text, params={"idle_pct_threshold": 25}, parents={},
        input=alarm, run_id="local", mcp=pool, node=node,
    )  # fmt: skip


async def test_smollm2_runs_codeact_turns_against_real_mcp(local, pool):
    node = Node(
        id="obs_station_idle", kind="observation", text=QUESTION, data=["robotics.station_idle_pct"]
    )
    executor = CodeActExecutor(chat_model(local), VerdictExtractor(lm=dspy_lm(local)), max_turns=2)
    outcome = await executor.decide(node, _ctx(node, pool))
    d = outcome.detail
    print(f"\nturns={d['turns']} tokens={d['input_tokens']}+{d['output_tokens']} "
          f"code runs={len(d['code'])} mcp calls={len(d['mcp_calls'])} -> "
          f"{outcome.verdict.value if outcome.verdict else outcome.error}")  # fmt: skip
    for i, reply in enumerate(d["replies"], 1):
        print(f"--- reply {i}:\n{reply[:600]}")

    assert 1 <= d["turns"] <= 2 and len(d["replies"]) == d["turns"]
    assert d["input_tokens"] > 500 and d["output_tokens"] > 0  # real usage from the server
    assert len(d["code"]) <= d["turns"]
    for run in d["code"]:  # every code block ran in the sandbox and was judged
        assert isinstance(run["ok"], bool) and (run["ok"] or run["error"])
    for call in d["mcp_calls"]:  # only the hinted server's tools can have been reached
        assert call["server"] == "robotics" or call["error"].startswith("tool not allowed")
    if outcome.verdict is not None:
        assert outcome.verdict.value in ("true", "false", "no_data")
        assert d["answer"] and d["extract"]["source"] in ("preparse", "lm")
    else:
        assert outcome.error.startswith("codeact: ") and "\n" not in outcome.error
