"""Accuracy of the model's single-call LLM paths on labeled cases: routers, judge, verdict extractor.

The cases in ``evals/model_cases/`` were written before any model run. Router cases are
dialogue turns at a node of ``examples/internet_support`` whose branches are natural-language
conditions; a choice is right when the branches chosen are exactly the labeled ones (none, for
a turn where no condition holds). Judge cases are (condition, dialogue, holds); verdict cases
are (check, free-text answer without a ``VERDICT:`` line, value); both have a train/held-out
split (``split``: ``train`` or ``eval``) for the optimizer.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import dspy

from sopgraph.examples import EXAMPLES
from sopgraph.graphs.executors import ToolContext
from sopgraph.graphs.loader import load_sop
from sopgraph.graphs.model import Verdict
from sopgraph.graphs.routing import fired_children
from sopgraph.nodes.router import DSPyRouter, FunctionCallingRouter, RouteFailed
from sopgraph.prompts.judge import ConditionJudge, JudgeError
from sopgraph.prompts.routing import render_context
from sopgraph.prompts.verdict import ExtractionError, VerdictExtractor, normalize_value

CASES = Path(__file__).parent / "model_cases"
DIALOGUE_SOP = EXAMPLES / "internet_support"


def load_cases(name: str) -> list[dict[str, Any]]:
    """The labeled cases of ``router``, ``judge`` or ``verdict``."""
    lines = (CASES / f"{name}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


async def _score(
    cases: list[dict[str, Any]], one: Callable[[dict[str, Any]], Awaitable[tuple[bool, str]]]
) -> dict[str, Any]:
    """Run ``one`` on each case in turn (one request at a time); accuracy, failures, seconds."""
    rows = []
    for case in cases:
        began = time.perf_counter()
        try:
            ok, got = await one(case)
        except Exception as exc:  # noqa: BLE001 - a dead server fails the case, not the run
            first = (str(exc).splitlines() or [""])[0][:300]
            ok, got = False, f"failed: {type(exc).__name__}: {first}"
        rows.append({"ok": ok, "got": got, "seconds": round(time.perf_counter() - began, 1)})
    n = len(rows)
    return {
        "n": n,
        "accuracy": round(sum(r["ok"] for r in rows) / n, 4) if n else 0.0,
        "unparsed": sum(r["got"].startswith("failed:") for r in rows),
        "seconds_per_case": round(sum(r["seconds"] for r in rows) / n, 1) if n else 0.0,
        "cases": rows,
    }


async def eval_router(router: Any, cases: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Branch-choice accuracy of a router (``FunctionCallingRouter`` or ``DSPyRouter``)."""
    sop = load_sop(DIALOGUE_SOP)
    cases = cases if cases is not None else load_cases("router")

    async def one(case: dict[str, Any]) -> tuple[bool, str]:
        node = sop.nodes[case["node"]]
        verdict = Verdict(value="true", explanation="the step was carried out")
        _, conditions = fired_children(node, verdict)
        ctx = ToolContext(node_id=node.id, text=node.text, params={}, parents={},
                          input=case["input"], run_id="eval", node=node)  # fmt: skip
        want = {c for i in case["expected"] for c in conditions[i - 1][1]}
        try:
            decision = await router.choose(node, verdict, conditions, ctx, nodes=sop.nodes)
        except RouteFailed as exc:
            return False, f"failed: {exc}"
        return set(decision.children) == want, ",".join(decision.children) or "(none)"

    return await _score(cases, one)


def split_cases(name: str, split: str, limit: int | None = None) -> list[dict[str, Any]]:
    """The first ``limit`` cases of one split (``train`` or ``eval``) of ``judge`` or ``verdict``."""
    return [c for c in load_cases(name) if c["split"] == split][:limit]


def judge_examples(split: str) -> list[dspy.Example]:
    """The judge cases of one split as DSPy examples (inputs: condition, context)."""
    return [
        dspy.Example(
            condition=c["condition"], context=render_context(c["input"]), holds=c["holds"]
        ).with_inputs("condition", "context")
        for c in split_cases("judge", split)
    ]


async def eval_judge(
    judge: ConditionJudge, split: str = "eval", limit: int | None = None
) -> dict[str, Any]:
    """Accuracy of the condition judge on (the first ``limit``) labeled cases of one split."""
    cases = split_cases("judge", split, limit)

    async def one(case: dict[str, Any]) -> tuple[bool, str]:
        try:
            pred = await judge.ajudge(case["condition"], render_context(case["input"]))
        except JudgeError as exc:
            return False, f"failed: {exc}"
        return pred.holds == case["holds"], str(pred.holds)

    return await _score(cases, one)


def verdict_examples(split: str) -> list[dspy.Example]:
    """The verdict cases of one split as DSPy examples (inputs: question, answer)."""
    return [
        dspy.Example(question=c["question"], answer=c["answer"], value=c["value"]).with_inputs(
            "question", "answer"
        )
        for c in split_cases("verdict", split)
    ]


async def eval_verdict(
    extractor: VerdictExtractor, split: str = "eval", limit: int | None = None
) -> dict[str, Any]:
    """Accuracy of the verdict extractor on (the first ``limit`` cases of) one split."""
    cases = split_cases("verdict", split, limit)

    async def one(case: dict[str, Any]) -> tuple[bool, str]:
        try:
            verdict, _ = await extractor.averdict(case["question"], case["answer"])
        except ExtractionError as exc:
            return False, f"failed: {exc}"
        return verdict.value == normalize_value(case["value"]), verdict.value

    return await _score(cases, one)


def router_pair(chat: Any, lm: Any) -> dict[str, Any]:
    """The two routers this module compares, on the same model."""
    return {"function_calling": FunctionCallingRouter(chat), "dspy": DSPyRouter(lm=lm)}
