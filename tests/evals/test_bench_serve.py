"""The serving benchmark against a real `sopgraph mcp serve --transport http`, on alarm triage."""

from __future__ import annotations

import asyncio

from fc_world import fc_home, fc_world  # noqa: F401

from sopgraph.evals.bench_serve import (
    REPO,
    TRIAGE_SOP,
    bench_mcp,
    default_inputs,
    timed_runs,
    triage_inputs,
)
from sopgraph.evals.fc_triage.dataset import load_scenarios
from sopgraph.graphs.loader import load_sop
from sopgraph.runtime.latency import percentile

TRIAGE_SERVERS = {"conveyance_warehouse": 1, "ops_store": 1, "robotics_metrics": 1}


def test_percentile_is_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile([7.0], 99) == 7.0
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0


async def test_timed_runs_bounds_concurrency_and_counts_failures():
    in_flight = peak = 0

    async def call(inp):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        if inp["x"] == "boom":
            raise RuntimeError("boom")
        return None if inp["x"] == "ok" else "status unresolved"

    inputs = [{"x": "ok"}, {"x": "bad"}, {"x": "boom"}]
    latencies, failures, wall = await timed_runs(call, inputs, n=9, concurrency=2)
    assert len(latencies) == 9 and peak == 2 and wall > 0
    assert sorted(failures) == ["RuntimeError: boom"] * 3 + ["status unresolved"] * 3


def test_triage_inputs_are_world_alarms_some_reaching_a_gated_action(fc_home):  # noqa: F811
    inputs = triage_inputs(fc_home, 10)
    assert default_inputs(TRIAGE_SOP, fc_home, 10) == inputs
    by_id = {s.alarm_id: s for s in load_scenarios(fc_home / "fc_world" / "scenarios.jsonl")}
    assert len({i["alarm_id"] for i in inputs}) == 10
    assert all(by_id[i["alarm_id"]].input == i for i in inputs)
    sop = load_sop(TRIAGE_SOP)
    gated = {n for n, node in sop.nodes.items() if node.approval == "required"}
    assert sum(bool(gated & set(by_id[i["alarm_id"]].actions)) for i in inputs) == 2
    assert default_inputs(REPO / "examples" / "service_interruption")[0] == {"case_id": "leaf_01"}


async def test_bench_mcp_small_on_triage(fc_home):  # noqa: F811
    # One alarm in three reaches a gated action (approved by policy); an unknown alarm type
    # is refused by the server: those runs fail.
    inputs = [*triage_inputs(fc_home, 2, gated_share=0.5), {"type": "no_such_alarm"}]
    result = await bench_mcp(n=6, concurrency=3, inputs=inputs, clients=2, home=fc_home)
    assert result["server"] == "mcp" and result["sop_id"] == "fc_outbound_dock_triage"
    assert (result["completed"], result["failed"]) == (4, 2), result
    (error,) = result["errors"]
    assert error.startswith("error") and "unknown input type 'no_such_alarm'" in error
    assert 0 < result["p50_ms"] <= result["p99_ms"]
    assert result["warmup_ms"] > 0
    # The server opened the SOP's MCP servers once, for every run.
    assert result["mcp_processes"] == TRIAGE_SERVERS
