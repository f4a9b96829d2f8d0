"""End-to-end triage accuracy against the world's ground-truth scenarios.

An alarm is correct when the observations, root causes and actions of its run all match the
scenario's (as sets). Runs approve every gated action, as the labels assume, and keep their
checkpoints in memory: durability is measured elsewhere, accuracy here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from sopgraph.evals.fc_triage.dataset import Scenario
from sopgraph.runtime.runner import RunResult, Session


class AlarmOutcome(BaseModel):
    """One alarm's run compared with its ground truth."""

    alarm_id: str
    type: str
    site: str
    observations_ok: bool
    root_causes_ok: bool
    actions_ok: bool
    path: list[str]
    root_causes: list[str]
    actions: list[str]
    ms: float
    tokens: int = 0
    status: str = "done"
    diff: dict[str, Any] = Field(default_factory=dict)

    @property
    def correct(self) -> bool:
        return self.observations_ok and self.root_causes_ok and self.actions_ok


def found(result: RunResult, kind: str) -> list[str]:
    """Nodes of ``kind`` whose verdict is true in the run (the latest, if a loop revisited)."""
    kinds = {s["node"]: s["kind"] for s in result.trail}
    return sorted(
        n for n, v in result.verdicts.items() if kinds.get(n) == kind and v.value == "true"
    )


def run_tokens(result: RunResult) -> int:
    return result.tokens["total_tokens"]


def compare(scenario: Scenario, result: RunResult, ms: float) -> AlarmOutcome:
    obs, rcs = found(result, "observation"), found(result, "root_cause")
    acts = sorted({a["node"] for a in result.actions if a.get("approved")})
    diff: dict[str, Any] = {}
    for name, got, want in (
        ("observations", obs, sorted(scenario.observations)),
        ("root_causes", rcs, sorted(scenario.root_causes)),
        ("actions", acts, sorted(set(scenario.actions))),
    ):
        if got != want:
            diff[name] = {
                "missing": sorted(set(want) - set(got)),
                "extra": sorted(set(got) - set(want)),
            }
    if result.unresolved:
        diff["unresolved"] = result.unresolved
    return AlarmOutcome(
        alarm_id=scenario.alarm_id, type=scenario.type, site=scenario.site,
        observations_ok="observations" not in diff, root_causes_ok="root_causes" not in diff,
        actions_ok="actions" not in diff, path=result.path, root_causes=rcs, actions=acts,
        ms=round(ms, 3), tokens=run_tokens(result), status=result.status, diff=diff,
    )  # fmt: skip


async def triage_batch(
    session: Session,
    scenarios: list[Scenario],
    concurrency: int = 4,
    on_result: Callable[[AlarmOutcome], None] | None = None,
) -> list[AlarmOutcome]:
    """Run every scenario's alarm through an open session and compare with its truth."""
    sem = asyncio.Semaphore(concurrency)

    async def one(sc: Scenario) -> AlarmOutcome:
        async with sem:
            start = time.perf_counter()
            result = await session.run(sc.input, thread_id=f"{sc.alarm_id}-{time.monotonic_ns()}")
            outcome = compare(sc, result, (time.perf_counter() - start) * 1000)
        if on_result:
            on_result(outcome)
        return outcome

    return list(await asyncio.gather(*(one(sc) for sc in scenarios)))


def summarize(outcomes: list[AlarmOutcome], arch: str) -> dict[str, Any]:
    """The JSON shape of ``sopgraph eval triage``."""
    n = len(outcomes)

    def rate(xs: list[bool]) -> float:
        return round(sum(xs) / n, 4) if n else 0.0

    failures = [o for o in outcomes if not o.correct]
    return {
        "arch": arch,
        "n": n,
        "accuracy": rate([o.correct for o in outcomes]),
        "observation_acc": rate([o.observations_ok for o in outcomes]),
        "root_cause_acc": rate([o.root_causes_ok for o in outcomes]),
        "action_acc": rate([o.actions_ok for o in outcomes]),
        "llm_tokens_per_alarm": round(sum(o.tokens for o in outcomes) / n, 1) if n else 0.0,
        "unresolved_alarms": sum(o.status == "unresolved" for o in outcomes),
        "failures": [
            {"alarm_id": o.alarm_id, "type": o.type, "site": o.site, "diff": o.diff}
            for o in failures[:20]
        ],
    }


async def eval_triage(
    sop_dir: Path,
    scenarios: list[Scenario],
    *,
    arch: str = "direct",
    model: Any = None,
    lm: Any = None,
    concurrency: int = 4,
    on_result: Callable[[AlarmOutcome], None] | None = None,
) -> list[AlarmOutcome]:
    async with Session(
        sop_dir, checkpoint="memory", approval="approve", arch=arch, model=model, lm=lm
    ) as session:
        return await triage_batch(session, scenarios, concurrency, on_result)


def majority_baseline(sop_dir: Path, train: list[Scenario], held_out: list[Scenario]) -> float:
    """Accuracy of a trivial triage: every node answers its most frequent training verdict."""
    from collections import Counter

    from sopgraph.evals.fc_triage.plant import parse_ts
    from sopgraph.evals.fc_triage.scenarios import scenario_record, walk
    from sopgraph.evals.fc_triage.truth import Truth
    from sopgraph.graphs.loader import load_sop

    counts: dict[str, Counter] = {}
    for sc in train:
        for node, value in sc.verdicts.items():
            counts.setdefault(node, Counter())[value] += 1

    class Majority:
        def label(self, node_id: str, q: Any, params: Any) -> Truth:
            c = counts.get(node_id)
            return Truth(c.most_common(1)[0][0] if c else "false")

    sop = load_sop(sop_dir)
    right = 0
    for sc in held_out:
        alarm = {"alarm_id": sc.alarm_id, "type": sc.type, "site": sc.site,
                 "station": sc.station, "ts": parse_ts(sc.timestamp)}  # fmt: skip
        path, verdicts, actions = walk(sop, Majority(), alarm, {})  # type: ignore[arg-type]
        rec = scenario_record(sop, alarm, path, verdicts, actions)
        right += all(
            sorted(rec[k]) == sorted(getattr(sc, k))
            for k in ("observations", "root_causes", "actions")
        )
    return round(right / len(held_out), 4) if held_out else 0.0
