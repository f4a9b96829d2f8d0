"""``bench_langgraph``: concurrent runs through the real LangGraph server, counted and timed."""

from __future__ import annotations

import pytest
from sop_factory import make_sop

from evals.bench_serve import BENCHES, bench_langgraph
from sopgraph.langgraph_dev import LangGraphDev

pytestmark = pytest.mark.slow

GATED = {
    "id": "bench_gated",
    "entry": {"alarm": ["check"]},
    "nodes": {
        "check": {"kind": "observation", "text": "check", "next": {"true": ["act_restart"]}},
        "act_restart": {"kind": "action", "text": "restart", "approval": "required"},
    },
}


async def test_bench_langgraph_counts_completed_and_paused_runs(tmp_path):
    sop = make_sop(tmp_path / "sop", GATED, {"check": "return Verdict(value=True)"})
    inputs = [{"type": "alarm"}]
    with LangGraphDev(
        workdir=tmp_path / "server", jobs=4, env={"SOPGRAPH_HOME": str(tmp_path)}
    ) as srv:
        ok = await bench_langgraph(6, 3, sop, inputs, url=srv.url, approval="approve")
        paused = await bench_langgraph(4, 2, sop, inputs, url=srv.url, approval="ask")
    assert ok["server"] == "langgraph" and ok["sop_id"] == "bench_gated"
    assert (ok["completed"], ok["failed"]) == (6, 0), ok["errors"]
    assert 0 < ok["p50_ms"] <= ok["p99_ms"]
    assert (paused["completed"], paused["failed"]) == (0, 4)
    assert paused["errors"] == ["status interrupted"]


async def test_bench_langgraph_starts_its_own_server_on_the_example():
    assert BENCHES["langgraph"] is bench_langgraph
    r = await bench_langgraph(n=4, concurrency=4)
    assert (r["completed"], r["failed"]) == (4, 0), r["errors"]
    assert r["sop_id"] == "service_interruption_handling"
