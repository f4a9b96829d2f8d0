"""``sopgraph bench triage``: per-alarm latency and throughput of compiled-tool triage.

Measured side by side in one run: (1) each alarm alone through LangGraph and the real MCP
servers over stdio (p50/p99), (2) the same alarms with concurrency (alarms/s), and (3) the
lower bound: the same tools called in-process against the same stores, walking the SOP in
plain Python with neither LangGraph nor an MCP transport. ``overhead_ratio`` is (1)/(3).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sopgraph.evals.fc_triage.dataset import Scenario
from sopgraph.evals.in_process_mcp import InProcessMcp
from sopgraph.evals.triage_eval import run_tokens
from sopgraph.graphs.compiler import entry_nodes
from sopgraph.graphs.model import Node
from sopgraph.graphs.routing import fired_children
from sopgraph.graphs.runner import Session
from sopgraph.graphs.services import Services
from sopgraph.graphs.topology import awalk
from sopgraph.nodes.tool_node import as_verdict


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    xs = sorted(values)
    k = min(len(xs) - 1, max(0, round(q / 100 * (len(xs) - 1))))
    return xs[k]


async def plain_traverse(services: Services, inp: dict[str, Any]) -> list[str]:
    """Walk the SOP layer by layer calling tools directly: the floor under the compiled graph."""
    sop = services.sop
    state: dict[str, Any] = {"input": inp, "verdicts": {}}

    async def decide(node: Node) -> list[str]:
        if node.is_action:
            return list(node.next.true) + list(node.next.always)
        ctx = services.context(node, state, "bench", [])
        tool = services.registry.resolve(node.tool_name)
        verdict = as_verdict(await tool.fn(ctx.site, ctx.timestamp, ctx))
        state["verdicts"][node.id] = verdict.model_dump()
        return fired_children(node, verdict)[0]

    return await awalk(sop, entry_nodes(sop, inp), decide)


async def bench_triage(
    sop_dir: Path,
    scenarios: list[Scenario],
    *,
    concurrency: int = 8,
    checkpoint: str = "memory",
    arch: str = "direct",
    model: Any = None,
    lm: Any = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    """Run the three measurements on ``scenarios`` and return the figures."""
    tick = progress or (lambda phase, i, n: None)
    n = len(scenarios)
    latencies: list[float] = []
    tokens = 0
    async with Session(
        sop_dir, checkpoint=checkpoint, approval="approve", arch=arch, model=model, lm=lm
    ) as session:
        await session.run(scenarios[0].input)  # warm: imports, server caches
        for i, sc in enumerate(scenarios):
            start = time.perf_counter()
            result = await session.run(sc.input)
            latencies.append((time.perf_counter() - start) * 1000)
            tokens += run_tokens(result)
            tick("sequential", i + 1, n)
        sem = asyncio.Semaphore(concurrency)
        done = 0

        async def one(sc: Scenario) -> None:
            nonlocal done
            async with sem:
                await session.run(sc.input)
            done += 1
            tick("concurrent", done, n)

        start = time.perf_counter()
        await asyncio.gather(*(one(sc) for sc in scenarios))
        wall = time.perf_counter() - start
        services = session.services

    lower: list[float] = []
    inproc = InProcessMcp(sop_dir)
    floor = Services(**{**services.__dict__, "mcp": inproc, "log": None})
    await plain_traverse(floor, scenarios[0].input)
    for i, sc in enumerate(scenarios):
        start = time.perf_counter()
        await plain_traverse(floor, sc.input)
        lower.append((time.perf_counter() - start) * 1000)
        tick("lower bound", i + 1, n)
    p50, lb = percentile(latencies, 50), percentile(lower, 50)
    return {
        "alarms": n,
        "arch": arch,
        "checkpoint": checkpoint,
        "p50_ms": round(p50, 2),
        "p99_ms": round(percentile(latencies, 99), 2),
        "mean_ms": round(statistics.fmean(latencies), 2),
        "concurrency": concurrency,
        "alarms_per_s": round(n / wall, 1),
        "lower_bound_p50_ms": round(lb, 3),
        "lower_bound_p99_ms": round(percentile(lower, 99), 3),
        "overhead_ratio": round(p50 / lb, 2) if lb else None,
        "llm_tokens_per_alarm": round(tokens / n, 1),
    }
