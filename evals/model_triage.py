"""Alarm triage with a model on a fixed sample covering every alarm type, next to its baselines.

For one sample it runs the chosen architecture (``codeact``: the model decides every node), the
compiled tools (``direct``) and the trivial baseline (every decision node ``false``), and
reports accuracy, unresolved alarms, turns, tokens and seconds per model-decided node. Whether
the model answered live or from a cassette is counted from the loopback front's exchanges.
"""

from __future__ import annotations

import asyncio
import json
import math
import statistics
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from sopgraph.evals.fc_triage.dataset import Scenario
from sopgraph.evals.triage_eval import AlarmOutcome, compare
from sopgraph.graphs.executors import ExecutorChain, Outcome, ToolContext
from sopgraph.graphs.model import Node, Verdict
from sopgraph.runtime.runner import RunResult, Session


def covering_sample(scenarios: list[Scenario], n: int) -> list[Scenario]:
    """The first scenario of each alarm type in file order, then the next ones, ``n`` in all."""
    chosen: list[Scenario] = []
    seen: set[str] = set()
    for sc in scenarios:
        if sc.type not in seen:
            seen.add(sc.type)
            chosen.append(sc)
    rest = [sc for sc in scenarios if sc not in chosen]
    return (chosen + rest)[:n] if n >= len(chosen) else chosen[:n]


class AlwaysFalse:
    """The trivial baseline: every decision node is ``false``, without looking at any data."""

    name = "always_false"

    async def decide(self, node: Node, ctx: ToolContext) -> Outcome:
        return Outcome(verdict=Verdict(value="false", explanation="baseline"), executor=self.name)


def _session(
    sop_dir: Path, *, arch: str, model: Any, lm: Any, baseline: bool, pool: Any = None
) -> Session:
    session = Session(sop_dir, checkpoint="memory", approval="approve", arch=arch, model=model,
                      lm=lm, mcp_pool=pool)  # fmt: skip
    if baseline:  # before the graph is compiled in __aenter__
        session.services.chain = ExecutorChain([AlwaysFalse()])
        session.services.router = None
    return session


async def _alarms(
    session: Session, scenarios: list[Scenario], progress: Path | None = None
) -> list[tuple[AlarmOutcome, RunResult]]:
    out = []
    for sc in scenarios:  # one alarm at a time: one local model process computes one request
        began = time.perf_counter()
        result = await session.run(sc.input, thread_id=f"{sc.alarm_id}-{time.monotonic_ns()}")
        row = (compare(sc, result, (time.perf_counter() - began) * 1000), result)
        out.append(row)
        if progress is not None:  # a long live run keeps every finished alarm
            with progress.open("a") as f:
                f.write(json.dumps(_alarm_row(*row), default=str) + "\n")
    return out


async def _three_runs(
    sop_dir: Path, scenarios: list[Scenario], *, arch: str, model: Any, lm: Any,
    progress: Path | None,
) -> tuple[list, float, list, list]:  # fmt: skip
    """The model's run (and its seconds), then the compiled tools' and the all-false
    baseline's on the same alarms, over one start of the SOP's MCP servers (a replay's time
    was mostly three starts)."""
    async with AsyncExitStack() as stack:
        began = time.perf_counter()
        first = _session(sop_dir, arch=arch, model=model, lm=lm, baseline=False)
        await stack.enter_async_context(first)
        rows = await _alarms(first, scenarios, progress)
        model_s = time.perf_counter() - began
        runs = []
        for baseline in (False, True):  # the same servers: a started pool is not restarted
            other = _session(sop_dir, arch="direct", model=None, lm=None, baseline=baseline,
                             pool=first.pool)  # fmt: skip
            await stack.enter_async_context(other)
            runs.append(await _alarms(other, scenarios))
    return rows, model_s, runs[0], runs[1]


def node_verdicts(sc: Scenario, result: RunResult) -> tuple[int, int]:
    """(right, compared): the run's decision-node verdicts against the truth's, on the nodes
    both evaluated (a node the truth never reached has no verdict to compare)."""
    right = compared = 0
    for step in result.trail:
        want = sc.verdicts.get(str(step.get("node")))
        if step.get("kind") == "action" or want is None:
            continue
        compared += 1
        right += step.get("verdict") == want
    return right, compared


def latency(rows: list[tuple[AlarmOutcome, RunResult]]) -> dict[str, float]:
    """Seconds per alarm, p50 and p99 (the paper's Table 4 figures for one architecture)."""
    seconds = [o.ms / 1000 for o, _ in rows]
    if not seconds:
        return {}
    return {"seconds_per_alarm_p50": round(statistics.median(seconds), 3),
            "seconds_per_alarm_p99": percentile(seconds, 99, 3)}  # fmt: skip


def percentile(values: list[float], q: float, digits: int = 1) -> float:
    """The nearest-rank ``q`` percentile (p99 of 12 values is the largest)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return round(ordered[rank - 1], digits)


def _alarm_row(o: AlarmOutcome, result: RunResult) -> dict[str, Any]:
    return {"alarm_id": o.alarm_id, "type": o.type, "correct": o.correct, "status": o.status,
            "tokens": o.tokens, "seconds": round(o.ms / 1000, 1), "diff": o.diff,
            "per_node": node_figures([(o, result)], result_arch(result))}  # fmt: skip


def result_arch(result: RunResult) -> str:
    """The executor that decided most nodes of a run (the model's, in a model run)."""
    names = [s.get("executor") for s in result.trail if s.get("kind") != "action"]
    return max(set(names), key=names.count) if names else ""


def _accuracy(rows: list[tuple[AlarmOutcome, RunResult]]) -> dict[str, Any]:
    n = len(rows)
    return {
        "accuracy": round(sum(o.correct for o, _ in rows) / n, 4) if n else 0.0,
        "unresolved_alarms": sum(o.status == "unresolved" for o, _ in rows),
    }


def node_figures(rows: list[tuple[AlarmOutcome, RunResult]], executor: str) -> dict[str, Any]:
    """Turns, tokens and seconds of the nodes ``executor`` decided (or failed to)."""
    steps = [s for _, r in rows for s in r.trail if s.get("executor") == executor or (
        s.get("status") == "unresolved" and any(a.get("executor") == executor
                                                for a in s.get("attempts") or []))]  # fmt: skip
    steps = [s for s in steps if s.get("kind") != "action"]
    if not steps:
        return {"nodes": 0}
    seconds = [float(s.get("ms") or 0) / 1000 for s in steps]
    details = [s.get("detail") or {} for s in steps]
    turns = [int(d.get("turns") or 0) for d in details]
    tokens = [int(d.get("input_tokens") or 0) + int(d.get("output_tokens") or 0) for d in details]
    return {
        "nodes": len(steps),
        "unresolved_nodes": sum(s.get("status") == "unresolved" for s in steps),
        "turns_mean": round(statistics.mean(turns), 2),
        "turns_max": max(turns),
        "tokens_per_node_mean": round(statistics.mean(tokens), 1),
        "output_tokens_total": sum(int(d.get("output_tokens") or 0) for d in details),
        "seconds_per_node_mean": round(statistics.mean(seconds), 1),
        "seconds_per_node_p50": round(statistics.median(seconds), 1),
        "seconds_per_node_max": round(max(seconds), 1),
    }


def run_model_triage(
    sop_dir: Path,
    scenarios: list[Scenario],
    *,
    arch: str,
    model: Any,
    lm: Any,
    progress: Path | None = None,
) -> dict[str, Any]:
    """The figures of ``sopgraph model triage`` for one sample (the model part is the slow one).

    ``progress``: a JSON Lines file that gets each alarm's row as soon as it is done.
    """
    rows, model_s, direct, false = asyncio.run(
        _three_runs(sop_dir, scenarios, arch=arch, model=model, lm=lm, progress=progress)
    )
    by_id = {sc.alarm_id: sc for sc in scenarios}
    pairs = [node_verdicts(by_id[o.alarm_id], r) for o, r in rows]
    compared = sum(n for _, n in pairs)
    seconds = [o.ms / 1000 for o, _ in rows]
    n = len(rows)
    return {
        "arch": arch,
        "n": n,
        "sample": [{"alarm_id": o.alarm_id, "type": o.type} for o, _ in rows],
        "types": len({o.type for o, _ in rows}),
        **_accuracy(rows),
        "observation_acc": round(sum(o.observations_ok for o, _ in rows) / n, 4) if n else 0.0,
        "root_cause_acc": round(sum(o.root_causes_ok for o, _ in rows) / n, 4) if n else 0.0,
        "action_acc": round(sum(o.actions_ok for o, _ in rows) / n, 4) if n else 0.0,
        "node_verdict_acc": round(sum(r for r, _ in pairs) / compared, 4) if compared else 0.0,
        "node_verdicts_compared": compared,
        "llm_tokens_per_alarm": round(sum(o.tokens for o, _ in rows) / n, 1) if n else 0.0,
        "seconds_per_alarm": round(model_s / n, 1) if n else 0.0,
        "seconds_per_alarm_p50": round(statistics.median(seconds), 1) if n else 0.0,
        "seconds_per_alarm_p99": percentile(seconds, 99) if n else 0.0,
        "per_node": node_figures(rows, arch),
        "baseline_all_false": _accuracy(false),
        "compiled_tools": {**_accuracy(direct), **latency(direct)},
        "per_alarm": [
            {
                "alarm_id": o.alarm_id,
                "type": o.type,
                "correct": o.correct,
                "status": o.status,
                "tokens": o.tokens,
                "seconds": round(o.ms / 1000, 1),
                "diff": o.diff,
            }
            for o, _ in rows
        ],  # fmt: skip
    }
