"""The tool-making pipeline for one node: collect traces, write, test in the sandbox, repair.

Configurations follow the paper's ablation: ``sop`` (the node text only, one candidate),
``sop+d`` (plus the data-collection traces), ``sop+r`` (plus the test-repair loop) and
``sop+d+r`` (both). The loop runs at most ``rounds`` repairs, stops early on a full pass of the
training cases, and keeps the candidate with the best training pass rate (the earliest on a
tie). Held-out cases are only ever used by ``score_heldout``, after the make, never in a prompt.

Example:
    >>> record = await make_tool(deps, train_cases, config="sop+d+r", rounds=3, seed=0)
    >>> record.best_round, record.train_pass, record.tokens               # doctest: +SKIP
    (1, 1.0, 10412)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sopgraph.graphs.model import Node, Sop
from sopgraph.nodes.sandbox import SandboxLimits
from sopgraph.tools.registry import Registry
from sopgraph.tools.toolmaker.catalog import Catalog
from sopgraph.tools.toolmaker.collector import balanced_sample, collect
from sopgraph.tools.toolmaker.context import NodeBrief, render_evidence, render_failures
from sopgraph.tools.toolmaker.discovery import discover
from sopgraph.tools.toolmaker.maker import ToolMaker, Usage, shown
from sopgraph.tools.toolmaker.record import Candidate, Case, MakeRecord, Round, Validation
from sopgraph.tools.toolmaker.reflector import Reflector, feedback_text
from sopgraph.tools.toolmaker.validate import validate

DEFAULT_ROUNDS = 3
TRACE_CASES = 3
Stage = Callable[[str, str], None]  # (stage, detail) for a progress display


class MakeError(Exception):
    """The pipeline cannot start for this node (no collector for a +D config, no cases)."""


@dataclass
class MakeDeps:
    """What one node's make runs with: the SOP, the open MCP pool, the models."""

    sop: Sop
    node: Node
    brief: NodeBrief
    catalog: Catalog
    params_for: Callable[[dict[str, Any]], dict[str, Any]]  # a run input -> its parameters
    maker: ToolMaker
    reflector: Reflector
    collector: Any = None  # the CodeAct executor; needed by +D configs and the label-free variant
    model: str = "model"
    limits: SandboxLimits | None = None

    async def validate(self, code: str, cases: list[Case]) -> Validation:
        return await validate(
            code, cases, self.params_for, self.catalog,
            node_id=self.node.id, node_text=self.brief.text, limits=self.limits,
        )  # fmt: skip


def _noop(stage: str, detail: str) -> None:
    pass


async def make_tool(
    deps: MakeDeps,
    train: list[Case],
    *,
    config: str = "sop+d+r",
    rounds: int = DEFAULT_ROUNDS,
    seed: int = 0,
    traces: int = TRACE_CASES,
    on_stage: Stage = _noop,
) -> MakeRecord:
    """Make one node's tool from its labeled training cases (``traces`` of them traced)."""
    if not train:
        raise MakeError(f"{deps.node.id}: no training cases; the tool-maker needs labeled cases")
    with_traces, with_repair = "+d" in config, "+r" in config
    if with_traces and deps.collector is None:
        raise MakeError(
            f"config {config} needs the data-collector sub-agent: configure a model "
            "(SOPGRAPH_MODEL) or use --config sop / sop+r"
        )
    start = time.perf_counter()
    record = MakeRecord(
        node=deps.node.id, config=config, seed=seed, model=deps.model,  # type: ignore[arg-type]
        form=deps.maker.form, train_cases=len(train),  # type: ignore[arg-type]
    )  # fmt: skip
    if with_traces:
        t0 = time.perf_counter()
        picked = balanced_sample(train, traces, seed)
        record.traces = await collect(
            deps.sop, deps.node, picked, deps.collector, deps.catalog.pool, deps.params_for,
            on_case=lambda i, n: on_stage("collect", f"trace {i + 1}/{n}"),
        )  # fmt: skip
        record.stages["collect"] = round(time.perf_counter() - t0, 2)
        for t in record.traces:
            record.input_tokens += t.input_tokens
            record.output_tokens += t.output_tokens
        record.discovery = await discover(deps.catalog, deps.brief.server_names)
    evidence = render_evidence(record.discovery, record.traces) if with_traces else "none"
    feedback = "none"
    for n in range(1 + (rounds if with_repair else 0)):
        r0 = time.perf_counter()
        on_stage("write", f"round {n}")
        candidate, usage = await deps.maker.write(deps.brief, deps.catalog, evidence, feedback)
        on_stage("test", f"round {n}: {len(train)} cases in the sandbox")
        result = await _test(deps, candidate, train)
        rnd = _round(n, candidate, result, usage)
        record.rounds.append(rnd)
        full = rnd.passed == len(train)
        last = not with_repair or n == rounds or full
        if not last:
            on_stage("reflect", f"round {n}: {len(train) - rnd.passed} failures")
            failures = _failures_text(candidate, result)
            diagnosis, spent = await deps.reflector.diagnose(
                deps.brief, evidence, shown(candidate), failures
            )
            rnd.diagnosis = diagnosis
            usage.add(spent)
            rnd.input_tokens, rnd.output_tokens = usage.input_tokens, usage.output_tokens
            feedback = feedback_text(shown(candidate), failures, diagnosis)
        rnd.seconds = round(time.perf_counter() - r0, 2)
        record.input_tokens += rnd.input_tokens
        record.output_tokens += rnd.output_tokens
        if last:
            break
    best = max(record.rounds, key=lambda r: (r.passed, -r.round))
    record.best_round, record.train_pass = best.round, best.train_pass
    if best.passed == 0 and not best.candidate.code:
        record.notes.append("no round produced a runnable candidate")
    record.seconds = round(time.perf_counter() - start, 2)
    on_stage("done", f"best round {best.round}: train {best.passed}/{len(train)}")
    return record


async def _test(deps: MakeDeps, candidate: Candidate, cases: list[Case]) -> Validation:
    if candidate.problem:
        return Validation(ok=False, reason=candidate.problem)
    return await deps.validate(candidate.code, cases)


def _failures_text(candidate: Candidate, result: Validation) -> str:
    if candidate.problem:
        return f"the candidate could not be built: {candidate.problem}"
    if not result.ok:
        return f"the sandbox stopped the candidate: {result.reason}"
    return render_failures(result.results)


def _round(n: int, candidate: Candidate, result: Validation, usage: Usage) -> Round:
    return Round(
        round=n,
        candidate=candidate,
        train_pass=round(result.rate, 4),
        passed=result.passed,
        cases=len(result.results),
        sandbox_reason=result.reason,
        failures=result.failures[:5],
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
    )


async def score_heldout(deps: MakeDeps, record: MakeRecord, held_out: list[Case]) -> MakeRecord:
    """Run the kept candidate on the held-out cases (in the sandbox) and record its pass rate."""
    best = record.best
    record.eval_cases = len(held_out)
    if best is None or not best.candidate.code or not held_out:
        record.eval_pass = 0.0
        return record
    result = await deps.validate(best.candidate.code, held_out)
    record.eval_pass = round(result.rate, 4)
    if result.failures:
        record.notes.append(
            f"held-out: {len(result.failures)} of {len(held_out)} wrong, e.g. "
            + "; ".join(
                f"{f.case.site} {f.case.timestamp} expected {f.case.expected} got "
                f"{f.value or f.error}"
                for f in result.failures[:3]
            )
        )
    return record


def register(record: MakeRecord, registry: Registry, tool_name: str | None = None) -> int:
    """Register the kept candidate as a new, inactive version with its figures and record."""
    best = record.best
    if best is None or not best.candidate.code:
        raise MakeError(f"{record.node}: no runnable candidate to register")
    return registry.add_version(
        tool_name or record.node,
        best.candidate.code,
        author=f"tool-maker:{record.model}",
        train_pass=record.train_pass,
        eval_pass=record.eval_pass,
        tokens=record.tokens,
        seconds=record.seconds,
        record_json=record.model_dump_json(indent=1, by_alias=True),
    )
