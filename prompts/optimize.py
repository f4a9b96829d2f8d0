"""Few-shot optimization of a DSPy module on labeled examples, shared by the LLM roles.

``bootstrap`` is DSPy's ``BootstrapFewShot``: up to ``demos`` train examples the model itself
answered right (every output field, as the model wrote it) plus labeled ones to fill up;
``labeled`` is ``LabeledFewShot``: ``demos`` labeled examples, no LM call. The caller saves the
result with ``program.save(path)`` and loads it by default from ``prompts/optimized/``.

Example:
    >>> from dspy.utils.dummies import DummyLM
    >>> from sopgraph.prompts.judge import ConditionJudge, judge_match
    >>> lm = DummyLM([{"holds": "True", "rationale": "they said so"}] * 4)
    >>> train = [dspy.Example(condition="c", context="x", holds=True)]
    >>> judge = compile_program(ConditionJudge(lm=lm, program=None), train, judge_match,
    ...                         inputs=("condition", "context"), lm=lm, optimizer="labeled")
    >>> len(judge.decide.demos)
    1
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any, Literal, TypeVar

import dspy

Optimizer = Literal["bootstrap", "labeled"]
M = TypeVar("M", bound=dspy.Module)


def compile_program(
    student: M,
    trainset: Sequence[dspy.Example],
    metric: Callable[..., bool],
    *,
    inputs: Sequence[str],
    lm: dspy.BaseLM | None = None,
    optimizer: Optimizer = "bootstrap",
    demos: int = 4,
) -> M:
    """``student`` (a zero-shot module) optimized on ``trainset`` with ``optimizer``."""
    examples = [
        ex if getattr(ex, "_input_keys", None) else ex.with_inputs(*inputs) for ex in trainset
    ]
    if optimizer == "labeled":
        teleprompter: Any = dspy.LabeledFewShot(k=demos)
    elif optimizer == "bootstrap":
        teleprompter = dspy.BootstrapFewShot(
            metric=metric, max_bootstrapped_demos=demos, max_labeled_demos=demos
        )
    else:
        raise ValueError(f"unknown optimizer {optimizer!r}: use 'bootstrap' or 'labeled'")
    with dspy.context(lm=lm) if lm is not None else nullcontext():
        compiled = teleprompter.compile(student, trainset=examples)
    compiled.lm = lm  # the optimizer deep-copies the student: keep the caller's LM, not a copy
    return compiled
