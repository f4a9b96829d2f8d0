"""The judge executor: decides a node that no data can decide (the state of a dialogue) with an LLM.

A decision node without an API and without data hints is a free-text condition ("the customer
confirms the outage is over"); no tool or MCP query can decide it, only the conversation can.
The ``ConditionJudge`` DSPy module reads the run input and says whether it holds. Nodes with an
API or data hints are left to the next executor (``Unavailable``), as is every node when no LM
is configured.

Example:
    >>> chain = ExecutorChain([ToolExecutor(registry), JudgeExecutor(lm=lm), codeact])
"""

from __future__ import annotations

import time
from typing import Any

import dspy

from sopgraph.graphs.executors import Outcome, ToolContext, Unavailable
from sopgraph.graphs.model import Node, Verdict
from sopgraph.graphs.telemetry import agent_span, record_usage
from sopgraph.prompts.judge import ConditionJudge, JudgeError, lm_usage
from sopgraph.prompts.routing import render_context

NO_LM = "no DSPy LM is configured for the condition judge: set SOPGRAPH_MODEL"


def is_free_text_condition(node: Node) -> bool:
    """A decision node that names no API and no data: only the context can decide it."""
    return not node.is_action and node.api is None and not node.data


class JudgeExecutor:
    """Decides free-text condition nodes with ``ConditionJudge``; ``Unavailable`` for the rest.

    Args:
        judge: the (possibly optimized) judge module; default a fresh ``ConditionJudge(lm)``.
        lm: the DSPy LM for the default judge; default ``dspy.settings.lm``.
    """

    name = "judge"

    def __init__(self, judge: ConditionJudge | None = None, lm: dspy.BaseLM | None = None):
        self.judge = judge or ConditionJudge(lm=lm)

    def serves(self, node: Node) -> bool:
        return is_free_text_condition(node)

    async def decide(self, node: Node, ctx: ToolContext) -> Outcome:
        if not is_free_text_condition(node):
            raise Unavailable("the node names an API or data: not a free-text condition")
        if not self.judge.available:
            raise Unavailable(NO_LM)
        start = time.perf_counter()
        condition = ctx.text or node.text or node.id
        context = render_context(ctx.input)
        with agent_span(self.name, node.id, "judges a free-text condition") as span:
            try:
                pred = await self.judge.ajudge(condition, context)
            except JudgeError as exc:  # the chain records it and tries the next executor
                raise JudgeFailed(str(exc)) from None
            n_in, n_out = lm_usage(pred)
            record_usage(span, n_in, n_out, model=_lm_label(self.judge))
        rationale = str(pred.rationale or "")[:500]
        detail: dict[str, Any] = {
            "judge": {"holds": pred.holds, "rationale": rationale},
            "input_tokens": n_in,
            "output_tokens": n_out,
        }
        return Outcome(
            verdict=Verdict(value=pred.holds, explanation=rationale),
            executor=self.name,
            ms=(time.perf_counter() - start) * 1000,
            detail=detail,
        )


class JudgeFailed(RuntimeError):
    """The judge answered but no verdict could be read from it."""


def _lm_label(judge: ConditionJudge) -> str | None:
    lm = judge.lm or dspy.settings.lm
    return getattr(lm, "model", None)
