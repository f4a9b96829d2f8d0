"""``bench_langgraph``: concurrent alarm triages through the real LangGraph server, counted and timed."""

from __future__ import annotations

from fc_world import fc_home, fc_world  # noqa: F401

from sopgraph.evals.bench_serve import BENCHES, bench_langgraph, triage_inputs
from sopgraph.evals.langgraph_dev import CONFIG, LangGraphDev

TRIAGE_SERVERS = {"conveyance_warehouse": 1, "ops_store": 1, "robotics_metrics": 1}


async def test_bench_langgraph_counts_completed_and_paused_triages(tmp_path, fc_home):  # noqa: F811
    # Two of five alarms reach a gated action: approved by policy they complete, asked they pause.
    inputs = triage_inputs(fc_home, 5, gated_share=0.4)
    with LangGraphDev(
        CONFIG,
        workdir=tmp_path / "server",
        jobs=5,
        env={"SOPGRAPH_HOME": str(fc_home), "SOPGRAPH_APPROVAL": "client"},
    ) as srv:
        token = srv.tokens["langgraph-dev"]  # langgraph.json's auth: the server's bearer token
        ok = await bench_langgraph(
            5, 5, inputs=inputs, url=srv.url, token=token, approval="approve"
        )
        paused = await bench_langgraph(
            5, 5, inputs=inputs, url=srv.url, token=token, approval="ask"
        )
    assert ok["server"] == "langgraph" and ok["sop_id"] == "fc_outbound_dock_triage"
    assert (ok["completed"], ok["failed"]) == (5, 0), ok["errors"]
    assert 0 < ok["p50_ms"] <= ok["p99_ms"]
    assert ok["mcp_processes"] is None  # not our server to inspect
    assert (paused["completed"], paused["failed"]) == (3, 2)
    assert paused["errors"] == ["status interrupted"]


async def test_bench_langgraph_starts_its_own_server_on_the_triage_sop(fc_home):  # noqa: F811
    assert BENCHES["langgraph"] is bench_langgraph
    r = await bench_langgraph(n=6, concurrency=6, home=fc_home)
    assert (r["completed"], r["failed"]) == (6, 0), r["errors"]
    assert r["sop_id"] == "fc_outbound_dock_triage"
    # Six concurrent runs, one set of MCP sub-servers opened by the first and kept open.
    assert r["mcp_processes"] == TRIAGE_SERVERS
