"""The spec tool-maker optimized the DSPy way: ``BootstrapFewShot`` over other nodes' makes.

Each training example is one node (never one the evaluation scores): the inputs the tool-maker
sees for it (check, data, parameters, the library's demonstrations, no feedback) and, as its
label, the library's verified spec. The student fills the node's spec greedily under the node's
grammar; DSPy keeps a filled spec as a demonstration when the host's metric says it passes every
one of the node's training cases (the spec runs on the host, as in a make). Short of ``demos``
such specs, the labeled examples fill up (``max_labeled_demos``). The compiled program is saved
as DSPy saves any program and ``CheckMakerModule`` loads it by default.

DSPy's optimizers call the module and the metric synchronously: the compile runs in a worker
thread, and the metric hands each spec's execution back to the event loop that holds the MCP
sessions.

Example:
    >>> program, attempts = await optimize_check_maker(tasks, demos=2)   # doctest: +SKIP
    >>> program.save("prompts/optimized/check_maker.json")               # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import dspy

from sopgraph.prompts.adapter import dspy_context_with
from sopgraph.prompts.toolmaker import CheckMakerModule
from sopgraph.tools.toolmaker.execution import SpecRunner
from sopgraph.tools.toolmaker.grammar import as_spec_dict
from sopgraph.tools.toolmaker.record import Case

SCORE_TIMEOUT_S = 300  # one spec on one node's training cases


@dataclass
class Task:
    """One node the tool-maker is optimized on."""

    node: str
    texts: dict[str, str]  # the tool-maker's inputs (``sampling.inputs``)
    response_format: dict[str, Any]  # the node's grammar
    train: list[Case]
    runner: SpecRunner
    label: dict[str, Any]  # the library's verified spec, canonical
    lm: Any = None


class _Student(CheckMakerModule):
    """``CheckMakerModule`` with the synchronous call DSPy's optimizers make: the example's
    ``node`` picks the grammar, the rest are the signature's inputs."""

    def __init__(self, task_of: Callable[[str], Task]):
        super().__init__(program=None)
        self.task_of = task_of  # a function: DSPy's deep copies share it, never copy the sessions

    def forward(self, node: str, **texts: str) -> dspy.Prediction:
        task = self.task_of(node)
        with dspy_context_with(task.lm, task.response_format):
            return self.write(**texts, config={"temperature": 0.0})


async def optimize_check_maker(
    tasks: list[Task],
    *,
    demos: int = 2,
    on_attempt: Callable[[dict[str, Any]], None] | None = None,
) -> tuple[CheckMakerModule, list[dict[str, Any]]]:
    """The tool-maker compiled on ``tasks``; and every attempt (node, spec, training cases
    passed), in the order DSPy made them."""
    loop = asyncio.get_running_loop()
    by_node = {t.node: t for t in tasks}
    attempts: list[dict[str, Any]] = []

    def metric(example: dspy.Example, pred: dspy.Prediction, trace: Any = None) -> bool:
        task = by_node[example.node]
        row: dict[str, Any] = {"node": task.node, "spec": None, "passed": 0,
                               "cases": len(task.train), "problem": None}  # fmt: skip
        try:
            raw = pred.spec
            spec = as_spec_dict(raw if not isinstance(raw, str) else json.loads(raw))
            row["spec"] = spec
            score = asyncio.run_coroutine_threadsafe(
                task.runner.score(spec, task.train), loop
            ).result(SCORE_TIMEOUT_S)
            row["passed"], row["problem"] = score.passed, score.problem
        except Exception as exc:  # noqa: BLE001 - an unusable spec is a failed attempt, kept
            row["problem"] = f"{type(exc).__name__}: {exc}"
        attempts.append(row)
        if on_attempt:
            on_attempt(row)
        return passed_all(row)

    trainset = []
    for t in tasks:
        example = dspy.Example(node=t.node, **t.texts, spec=t.label)
        trainset.append(example.with_inputs("node", *t.texts))
    student = _Student(lambda node: by_node[node])
    optimizer = dspy.BootstrapFewShot(
        metric=metric, max_bootstrapped_demos=demos, max_labeled_demos=demos, max_rounds=1
    )
    compiled = await asyncio.to_thread(optimizer.compile, student, trainset=trainset)
    program = CheckMakerModule(program=None)
    program.write.demos = [_demo(d) for d in compiled.write.demos]
    return program, attempts


def passed_all(attempt: dict[str, Any]) -> bool:
    """Whether an attempt's spec ran and passed every training case of its node (kept)."""
    return attempt["problem"] is None and attempt["passed"] == attempt["cases"]


def _demo(example: dspy.Example) -> dspy.Example:
    """A demonstration with the signature's fields only (no ``node`` routing key)."""
    keep = {k: v for k, v in example.items() if k != "node"}
    return dspy.Example(**keep)
