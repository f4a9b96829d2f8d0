"""The serving benchmark against a real `sopgraph mcp serve --transport http`, with small N."""

from __future__ import annotations

import asyncio

from evals.bench_serve import bench_mcp, percentile, timed_runs


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


async def test_bench_mcp_small(tmp_path):
    # An unknown case makes the customer-service server refuse: those runs end unresolved.
    inputs = [{"case_id": "leaf_03"}, {"case_id": "combo_05"}, {"case_id": "no_such_case"}]
    result = await bench_mcp(n=6, concurrency=3, inputs=inputs, clients=2, home=tmp_path)
    assert result["server"] == "mcp" and result["sop_id"] == "service_interruption_handling"
    assert (result["completed"], result["failed"]) == (4, 2), result
    assert result["errors"] == ["status unresolved"]
    assert 0 < result["p50_ms"] <= result["p99_ms"]
    assert result["warmup_ms"] > 0
