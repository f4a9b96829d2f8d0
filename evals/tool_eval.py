"""Per-node pass rate of an SOP's compiled tools on its labeled cases (the paper's pass@1).

A node passes only if its tool gets every case of the split right. Tools run exactly as in
production: through the SOP's MCP servers, with the case's parameters (``params_by``). Each node's verdicts are
also checked for units (``graphs.units.unit_problems``): a threshold the SOP text gives a unit
must be met by an observation in that unit, which the report shows side by side.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from sopgraph.evals.fc_triage.dataset import LabeledCase, load_cases
from sopgraph.graphs.executors import ToolContext
from sopgraph.graphs.loader import load_sop
from sopgraph.graphs.units import unit_problems
from sopgraph.nodes.mcp import McpPool, load_server_configs
from sopgraph.nodes.tool_node import as_verdict
from sopgraph.tools.params import ParamStore
from sopgraph.tools.registry import Registry, RegistryError


class CaseFailure(BaseModel):
    site: str
    timestamp: str
    expected: str
    got: str | None
    observed: Any = None
    expected_observed: Any = None
    error: str | None = None


class NodeResult(BaseModel):
    node: str
    version: int | None = None
    cases: int = 0
    correct: int = 0
    passed: bool = False
    error: str | None = None
    failures: list[CaseFailure] = Field(default_factory=list)
    ms_p50: float | None = None
    # observed and threshold in different units (right verdicts can still hide this)
    unit_problems: list[str] = Field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.correct / self.cases if self.cases else 0.0


async def _run_case(tool, node, sop, params: ParamStore, pool, case: LabeledCase):
    inp = case.run_input
    p = params.for_input(inp)
    ctx = ToolContext(
        node_id=node.id, text=sop.render_text(node, p), params=p, parents={},
        input=inp, run_id=f"eval:{node.id}", mcp=pool, node=node,
    )  # fmt: skip
    start = time.perf_counter()
    try:
        verdict = as_verdict(await tool.fn(inp, ctx))
    except Exception as exc:  # noqa: BLE001 - a raising tool fails the case, with its reason
        return None, f"{type(exc).__name__}: {exc}", (time.perf_counter() - start) * 1000, p
    return verdict, None, (time.perf_counter() - start) * 1000, p


async def eval_tools(
    sop_dir: Path,
    cases_dir: Path,
    split: str | None = "train",
    nodes: list[str] | None = None,
    concurrency: int = 8,
    on_node: Callable[[NodeResult], None] | None = None,
) -> list[NodeResult]:
    """Run each decision node's active tool on its labeled cases of ``split``."""
    sop = load_sop(sop_dir)
    registry = Registry(sop_dir / "tools")
    params = ParamStore(sop, sop_dir)
    wanted = [n for n in sop.decision_nodes if nodes is None or n.id in nodes]
    results: list[NodeResult] = []
    sem = asyncio.Semaphore(concurrency)
    async with McpPool(load_server_configs(sop_dir)) as pool:
        for node in wanted:
            res = NodeResult(node=node.id)
            try:
                cases = load_cases(cases_dir, node.id, split)  # type: ignore[arg-type]
            except FileNotFoundError as exc:
                res.error = str(exc)
                results.append(res)
                continue
            res.cases = len(cases)
            try:
                tool = registry.resolve(node.tool_name)
                res.version = tool.version
            except RegistryError as exc:
                res.error = str(exc)
                results.append(res)
                if on_node:
                    on_node(res)
                continue

            async def one(case: LabeledCase, tool=tool, node=node):
                async with sem:
                    return case, *(await _run_case(tool, node, sop, params, pool, case))

            latencies, samples = [], []
            for case, verdict, error, ms, site_params in await asyncio.gather(
                *(one(c) for c in cases)
            ):
                latencies.append(ms)
                if verdict is not None:
                    samples.append((verdict, site_params))
                got = verdict.value if verdict else None
                if got == case.expected:
                    res.correct += 1
                else:
                    res.failures.append(
                        CaseFailure(
                            site=case.site,
                            timestamp=case.timestamp,
                            expected=case.expected,
                            got=got,
                            observed=verdict.observed if verdict else None,
                            expected_observed=case.observed,
                            error=error,
                        )  # fmt: skip
                    )
            latencies.sort()
            res.ms_p50 = round(latencies[len(latencies) // 2], 3) if latencies else None
            res.passed = res.cases > 0 and res.correct == res.cases
            res.unit_problems = unit_problems(sop, node.id, samples)
            results.append(res)
            if on_node:
                on_node(res)
    return results


def summarize(results: list[NodeResult], split: str | None) -> dict[str, Any]:
    """The JSON shape of ``sopgraph eval tools``."""
    return {
        "split": split,
        "nodes": len(results),
        "passed": sum(r.passed for r in results),
        "pass_rate": round(sum(r.passed for r in results) / len(results), 4) if results else 0.0,
        "unit_problem_nodes": sum(bool(r.unit_problems) for r in results),
        "results": [
            {
                "node": r.node,
                "version": r.version,
                "cases": r.cases,
                "correct": r.correct,
                "passed": r.passed,
                "accuracy": round(r.rate, 4),
                "ms_p50": r.ms_p50,
                "error": r.error,
                "unit_problems": r.unit_problems,
                "failures": [f.model_dump() for f in r.failures[:5]],
            }  # fmt: skip
            for r in results
        ],
    }
