"""The condition judge: a DSPy module deciding whether a free-text condition holds in a context.

It decides SOP nodes no data can decide (the state of a dialogue); ``dspy.Predict`` over
``JudgeCondition``, so an optimizer can tune it on labeled (condition, context, holds) cases.

Example:
    >>> judge = ConditionJudge(lm=DummyLM([{"holds": "True", "rationale": "they said so"}]))
    >>> judge.judge("the customer says the problem persists", "user: still broken").holds
    True
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dspy
from dspy.utils.exceptions import AdapterParseError

from sopgraph.prompts.adapter import dspy_context
from sopgraph.prompts.envelope import role_lm
from sopgraph.prompts.optimize import Optimizer, compile_program
from sopgraph.prompts.routing import JudgeCondition


class JudgeError(ValueError):
    """The judge could not reach a verdict; ``str`` says why in one line."""


class NoJudgeModel(JudgeError):
    """No DSPy LM is configured for the judge."""


def lm_usage(pred: dspy.Prediction) -> tuple[int, int]:
    """Input and output tokens a prediction spent (0, 0 when usage was not tracked)."""
    usage = pred.get_lm_usage() or {}
    n_in = sum(int(u.get("prompt_tokens") or 0) for u in usage.values())
    n_out = sum(int(u.get("completion_tokens") or 0) for u in usage.values())
    return n_in, n_out


OPTIMIZED_JUDGE = Path(__file__).parent / "optimized" / "condition_judge.json"
"""The judge optimized on the labeled train dialogues (``sopgraph model optimize --module judge``)."""


class ConditionJudge(dspy.Module):
    """Judges one condition against a context.

    Args:
        lm: the DSPy LM; default ``dspy.settings.lm``.
        program: a saved, optimized program to load (its few-shot demos); ``"default"`` loads
            ``OPTIMIZED_JUDGE`` when it exists, None starts zero-shot.
    """

    def __init__(
        self, lm: dspy.BaseLM | None = None, program: str | Path | None = "default"
    ) -> None:
        super().__init__()
        self.lm = role_lm(lm, "judge")
        self.decide = dspy.Predict(JudgeCondition)
        path = OPTIMIZED_JUDGE if program == "default" else program
        if path is not None and Path(path).is_file():
            self.load(str(path))

    @property
    def available(self) -> bool:
        return self.lm is not None or dspy.settings.lm is not None

    def _context(self) -> Any:
        return dspy_context(self.lm)

    def _check(self) -> None:
        if not self.available:
            raise NoJudgeModel("no DSPy LM is configured for the condition judge")

    def forward(self, condition: str, context: str) -> dspy.Prediction:
        self._check()
        with self._context(), dspy.context(track_usage=True), _unparsable():
            return self.decide(condition=condition, context=context)

    async def aforward(self, condition: str, context: str) -> dspy.Prediction:
        self._check()
        with self._context(), dspy.context(track_usage=True), _unparsable():
            return await self.decide.acall(condition=condition, context=context)

    def judge(self, condition: str, context: str) -> dspy.Prediction:
        """``holds`` (bool) and ``rationale``; raises JudgeError when no verdict can be read."""
        return _checked(self(condition=condition, context=context))

    async def ajudge(self, condition: str, context: str) -> dspy.Prediction:
        return _checked(await self.acall(condition=condition, context=context))


def _checked(pred: dspy.Prediction) -> dspy.Prediction:
    if not isinstance(pred.holds, bool):
        raise JudgeError(f"the judge answered {pred.holds!r}, not true or false")
    return pred


class _unparsable:
    """A reply DSPy cannot parse becomes a one-line JudgeError."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        if isinstance(exc, AdapterParseError):
            first = next((ln for ln in str(exc).splitlines() if ln.strip()), "unparsable")
            raise JudgeError(f"the judge's reply could not be parsed: {first}") from None
        return False


def judge_match(example: dspy.Example, pred: dspy.Prediction, trace: Any = None) -> bool:
    """The optimization metric: the judged ``holds`` equals the label."""
    return bool(pred.holds) == bool(example.holds)


def compile_judge(
    trainset: list[dspy.Example],
    *,
    lm: dspy.BaseLM | None = None,
    optimizer: Optimizer = "bootstrap",
    demos: int = 4,
) -> ConditionJudge:
    """A judge optimized on labeled (condition, context, holds) examples (see ``compile_program``)."""
    return compile_program(
        ConditionJudge(lm=lm, program=None), trainset, judge_match,
        inputs=("condition", "context"), lm=lm, optimizer=optimizer, demos=demos,
    )  # fmt: skip
