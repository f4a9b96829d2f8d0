"""The README's MCP client entry: `sopgraph mcp serve` started from some other folder (as Claude
Desktop does) runs the triage SOP when SOPGRAPH_HOME is absolute, and says how to fix it when
the home holds no world."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from fc_world import fc_home, fc_world  # noqa: F401
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from sopgraph.evals.fc_triage.dataset import load_scenarios


def _server(cwd: Path, home: Path | None) -> StdioServerParameters:
    # --approval client: the operator lets this client approve gated actions (default: ask)
    env = {k: v for k, v in os.environ.items() if k not in ("SOPGRAPH_HOME", "SOPGRAPH_SOPS")}
    if home is not None:
        env["SOPGRAPH_HOME"] = str(home)
    sopgraph = shutil.which("sopgraph", path=str(Path(sys.executable).parent))
    return StdioServerParameters(
        command=sopgraph, args=["mcp", "serve", "--approval", "client"], env=env, cwd=str(cwd)
    )


async def _run_sop(params: StdioServerParameters, alarm: dict) -> tuple[bool, str]:
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        reply = await session.call_tool(
            "run_sop", {"sop_id": "fc_outbound_dock_triage", "input": alarm, "approval": "approve"}
        )
    return bool(reply.isError), reply.content[0].text


async def test_run_sop_from_another_folder(fc_world, fc_home, tmp_path):  # noqa: F811
    elsewhere = tmp_path / "client_cwd"
    elsewhere.mkdir()
    scenario = load_scenarios(fc_world.scenarios, split="eval")[0]
    failed, text = await _run_sop(_server(elsewhere, fc_home.resolve()), scenario.input)
    assert not failed, text
    assert json.loads(text)["status"] == "done"
    # no SOPGRAPH_HOME: the home is .sopgraph in the client's folder, which holds no world
    failed, text = await _run_sop(_server(elsewhere, None), scenario.input)
    assert failed and "no such database" in text and "SOPGRAPH_HOME" in text, text
    assert "absolute path" in text
