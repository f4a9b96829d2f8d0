"""Run one agent over a sample of a domain's tasks, one JSON line per task, resuming a killed run.

The run folder holds ``run.json`` (what was asked: domain, agent, sample, registry, model) and
``records.jsonl`` (one line per finished task, flushed as it ends). Starting the same run
again skips the tasks already recorded; a different run in the same folder is refused.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from sopgraph.evals.sopbench.agent_result import AgentResult
from sopgraph.evals.sopbench.domain import Domain, DomainError, Task
from sopgraph.evals.sopbench.metrics import all_match

AGENTS = ("sopgraph", "fc", "react")


class RunSpec(BaseModel):
    """What a run folder was made for; resuming needs the same."""

    domain: str
    agent: str
    domain_tasks: int  # tasks in the domain: the sample is "N of domain_tasks"
    tasks: list[str]
    seed: int
    distractors: list[str] = []
    model: str = ""
    decide: str = "none"  # "code"/"quote": the answer decided by code (evals/sopbench/decide.py)
    votes: int = 1  # replies the decide-by-code step votes over


def task_record(task: Task, result: AgentResult, agent: str) -> dict[str, Any]:
    completed = result.answer is not None and result.error is None
    return {
        "task_id": task.task_id,
        "agent": agent,
        "inputs": task.inputs,
        "expected": task.expected,
        "answer": result.answer,
        "completed": completed,
        "strict": completed and all_match(result.answer, task.expected, lenient=False),
        "lenient": completed and all_match(result.answer, task.expected, lenient=True),
        "error": result.error,
        "tokens": result.tokens,
        "seconds": round(result.seconds, 4),
        "turns": result.turns,
        "forced_by": result.forced_by,
        "final_text": result.final_text,
        "steps": result.steps,
        **({"decided": result.decided} if result.decided is not None else {}),
    }


def read_records(path: Path) -> list[dict[str, Any]]:
    """The finished tasks of a run; a line cut short by a kill is ignored (it is re-run)."""
    out = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return out


def _sans_cassette(spec: RunSpec) -> RunSpec:
    """The run as compared for a resume: a live run recorded with one cassette mode is the same
    run resumed in another (``record``, then ``fill`` after a stop)."""
    model = re.sub(r" \(cassette (?:record|fill|replay)\)", "", spec.model)
    return spec.model_copy(update={"model": model})


def open_run(out_dir: Path, spec: RunSpec) -> list[dict[str, Any]]:
    """Create the run folder, or check it belongs to the same run; returns the records so far."""
    meta = out_dir / "run.json"
    if meta.exists():
        old = RunSpec.model_validate_json(meta.read_text(encoding="utf-8"))
        if _sans_cassette(old) != _sans_cassette(spec):
            diff = [k for k in RunSpec.model_fields if getattr(old, k) != getattr(spec, k)]
            raise DomainError(
                f"{out_dir}: holds another run (different {', '.join(diff)}); "
                "give another --out or repeat that run's options to resume it"
            )
    else:
        out_dir.mkdir(parents=True, exist_ok=True)
        meta.write_text(spec.model_dump_json(indent=2) + "\n", encoding="utf-8")
    wanted = set(spec.tasks)
    return [r for r in read_records(out_dir / "records.jsonl") if r["task_id"] in wanted]


async def run_tasks(
    domain: Domain,
    agent: Any,
    tasks: list[Task],
    out_dir: Path,
    spec: RunSpec,
    progress: Callable[[dict[str, Any], int, int], None] | None = None,
    budget_s: float | None = None,
) -> list[dict[str, Any]]:
    """Solve every task not yet recorded with ``agent`` (opened), appending its record.

    With ``budget_s``, no task starts once that many seconds have passed (the one running
    finishes): a slow local model's run is done in slices, each resuming the last.
    """
    started = time.monotonic()
    records = open_run(out_dir, spec)
    done = {r["task_id"] for r in records}
    todo = [t for t in tasks if t.task_id not in done]
    path = out_dir / "records.jsonl"
    with path.open("a", encoding="utf-8") as f:
        for task in todo:
            if budget_s is not None and time.monotonic() - started > budget_s:
                break
            record = task_record(task, await agent.solve(task), spec.agent)
            f.write(json.dumps(record, default=str) + "\n")
            f.flush()
            os.fsync(f.fileno())  # a kill loses at most the task in flight
            records.append(record)
            if progress is not None:
                progress(record, len(records), len(tasks))
    order = {t.task_id: i for i, t in enumerate(tasks)}
    return sorted(records, key=lambda r: order[r["task_id"]])
