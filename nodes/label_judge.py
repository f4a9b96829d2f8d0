"""A judge and router that answer from labels instead of a model: which conversation conditions
hold, and from which turn. Audits of labelled conversations and path evaluation's simulated
customers use it; with a model, ``JudgeExecutor`` and the LLM routers decide instead.

Example:
    >>> judge = LabelJudge({"the customer has a receipt": 4})
    >>> judge.upto = 3  # a prefix of three turns: the receipt is not mentioned yet
"""

from __future__ import annotations

from typing import Any

from sopgraph.graphs.model import Node, Verdict


class LabelJudge:
    """Holds a condition when its label's turn is inside the turns the audit shows it.

    ``labels`` maps a condition's text to the index of the turn from which it holds (0: from the
    start); a condition without a label does not hold (the customer never said so). ``upto`` is
    how many turns of the conversation are visible (None: all). Serves both as the condition
    judge (``ajudge``, the ``ConditionJudge`` interface) and as the router of natural-language
    ``when`` branches (``choose``).
    """

    lm = None
    available = True

    def __init__(self, labels: dict[str, int] | None = None) -> None:
        self.labels: dict[str, int] = dict(labels or {})
        self.upto: int | None = None
        self.asked: list[str] = []

    def holds(self, condition: str) -> bool:
        turn = self.labels.get(condition)
        return turn is not None and (self.upto is None or turn < self.upto)

    async def ajudge(self, condition: str, context: str) -> Any:
        import dspy

        self.asked.append(condition)
        verdict = self.holds(condition)
        return dspy.Prediction(holds=verdict, rationale=f"labelled: {verdict}")

    async def choose(
        self, node: Node, verdict: Verdict, conditions: list[tuple[str, list[str]]], ctx: Any
    ) -> list[str]:
        chosen: list[str] = []
        for text, then in conditions:
            self.asked.append(text)
            if self.holds(text):
                chosen += [c for c in then if c not in chosen]
        return chosen
