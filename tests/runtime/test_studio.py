"""The graphs ``langgraph.json`` serves: example graphs, the generic ``sop`` factory, lazy MCP."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from sop_factory import make_sop

from sopgraph.evals.langgraph_dev import REPO
from sopgraph.nodes.mcp import load_server_configs
from sopgraph.runtime import studio

ECHO_SERVER = Path(__file__).resolve().parents[1] / "servers" / "echo_metrics.py"
SOP = {
    "id": "studio_probe",
    "params": {"idle_pct_threshold": 25},
    "entry": {"alarm": ["obs_idle"]},
    "nodes": {
        "obs_idle": {"kind": "observation", "text": "idle", "next": {"true": ["act_note"]}},
        "act_note": {"kind": "action", "text": "note it"},
    },
}
IDLE = """
r = await ctx.mcp.call("metrics", "execute_range_query",
                       {"metric": "robotics.station_idle_pct", "site": "BFI4"})
return Verdict(value=r["value"] > ctx.params["idle_pct_threshold"], observed=r["value"])
"""


def _probe(tmp_path: Path) -> Path:
    root = make_sop(tmp_path / "probe", SOP, {"obs_idle": IDLE})
    servers = {"metrics": {"command": "python", "args": [str(ECHO_SERVER)]}}
    (root / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    return root


def test_langgraph_json_names_module_level_graphs_without_checkpointer():
    config = json.loads((REPO / "langgraph.json").read_text())
    assert set(config["graphs"]) >= {"service_interruption", "fc_alarm_triage", "sop"}
    for graph_id, spec in config["graphs"].items():
        module, name = spec.split(":")
        assert module == "sopgraph.runtime.studio"
        value = getattr(studio, name)
        if graph_id != "sop":
            assert value.checkpointer is None
            assert "sop_error" not in value.nodes, f"example {graph_id} did not load"


async def test_sop_factory_builds_the_configured_sop_and_caches_it(tmp_path, monkeypatch):
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    root = _probe(tmp_path)
    config = {"configurable": {"sop": str(root)}}
    graph = studio.sop(config)
    assert graph is studio.sop(config)
    assert {"obs_idle", "act_note"} <= set(graph.nodes)
    out = await graph.ainvoke({"input": {"type": "alarm"}}, {"configurable": {"thread_id": "t"}})
    assert [s["node"] for s in out["trail"]] == ["obs_idle", "act_note"]
    assert out["verdicts"]["obs_idle"]["observed"] == 31.2
    assert "sop_error" in studio.sop({}).nodes  # no default SOP: see test_studio_contract.py


def test_unknown_sop_is_one_line_naming_the_examples():
    with pytest.raises(ValueError) as err:
        studio.sop({"configurable": {"sop": "no_such_sop"}})
    assert "\n" not in str(err.value) and "fc_alarm_triage" in str(err.value)


async def test_an_sop_that_does_not_load_keeps_the_module_up(tmp_path, monkeypatch):
    monkeypatch.setattr(studio, "EXAMPLES", tmp_path)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "sop.yaml").write_text("id: bad\nnodes: {}\n")
    graph = studio.example_graph("bad")
    with pytest.raises(RuntimeError, match="graph 'bad' is unavailable: .*empty SOP"):
        await graph.ainvoke({"input": {}})


def test_mcp_pools_follow_the_event_loop(tmp_path):
    """Runs on different loops (the server's isolated-loop mode) each get working sessions."""
    pools = studio.LoopPools(load_server_configs(_probe(tmp_path)))

    async def idle() -> float:
        r = await pools.call(
            "metrics", "execute_range_query", {"metric": "robotics.station_idle_pct", "site": "x"}
        )
        return r["value"]

    assert asyncio.run(idle()) == 31.2
    assert asyncio.run(idle()) == 31.2  # a new loop: the first loop's sessions are gone
