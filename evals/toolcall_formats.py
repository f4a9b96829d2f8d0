"""Which tool-call format works best with the local model, measured on a small fixed set.

Each format (``nodes/models/_tool_format.py``) runs the function-calling router on the labeled router
cases and the SOP-Bench function-calling agent on a few tasks of one domain, with a short
turn budget. Every model reply is tallied: a **valid call** names an offered function and
gives every required argument; an **empty reply** has neither a call nor text. Only task ids
and figures are kept (SOP-Bench text is CC BY-NC, evaluation only).
"""

from __future__ import annotations

import time
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult

from sopgraph.evals.model_paths import DIALOGUE_SOP, eval_router, load_cases
from sopgraph.graphs.loader import load_sop
from sopgraph.graphs.model import Verdict
from sopgraph.graphs.routing import fired_children
from sopgraph.nodes.router import FunctionCallingRouter


class ReplyTally(BaseCallbackHandler):
    """Counts the model's replies: valid calls, invalid calls, text, empty.

    ``offered`` maps each function the model may call to its required arguments.
    """

    def __init__(self, offered: dict[str, list[str]] | None = None):
        self.offered = offered or {}
        self.replies = self.valid = self.invalid = self.text = self.empty = 0

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        for generations in response.generations:
            for generation in generations:
                self.count(getattr(generation, "message", None))

    def count(self, message: Any) -> None:
        self.replies += 1
        calls = list(getattr(message, "tool_calls", None) or [])
        bad = list(getattr(message, "invalid_tool_calls", None) or [])
        content = getattr(message, "content", "")
        text = content if isinstance(content, str) else str(content or "")
        if calls or bad:
            ok = not bad and all(self._valid(c) for c in calls)
            self.valid += ok
            self.invalid += not ok
        elif text.strip():
            self.text += 1
        else:
            self.empty += 1

    def _valid(self, call: dict[str, Any]) -> bool:
        required = self.offered.get(call.get("name") or "")
        args = call.get("args") or {}
        return required is not None and all(k in args for k in required)

    def figures(self) -> dict[str, Any]:
        n = self.replies
        rate = lambda k: round(k / n, 3) if n else 0.0  # noqa: E731
        return {
            "replies": n,
            "valid_calls": self.valid,
            "invalid_calls": self.invalid,
            "text_replies": self.text,
            "empty_replies": self.empty,
            "valid_call_rate": rate(self.valid),
            "empty_reply_rate": rate(self.empty),
        }


def router_offered(router: FunctionCallingRouter) -> dict[str, list[str]]:
    """The functions the router offers at the labeled cases' nodes (none take arguments)."""
    sop = load_sop(DIALOGUE_SOP)
    offered: dict[str, list[str]] = {}
    for case in load_cases("router"):
        node = sop.nodes[case["node"]]
        _, conditions = fired_children(node, Verdict(value="true"))
        _, _, specs = router.functions(conditions, sop.nodes)
        offered.update({s["function"]["name"]: [] for s in specs})
    return offered


async def measure_router(make_chat: Any, limit: int | None) -> dict[str, Any]:
    """Router accuracy and the reply tally over the first ``limit`` router cases."""
    tally = ReplyTally()
    router = FunctionCallingRouter(make_chat([tally]))
    tally.offered = router_offered(router)
    began = time.perf_counter()
    result = await eval_router(router, load_cases("router")[:limit])
    return {
        "cases": result["n"],
        "accuracy": result["accuracy"],
        "unparsed": result["unparsed"],
        **tally.figures(),
        "seconds": round(time.perf_counter() - began, 1),
        "answers": [c["got"] for c in result["cases"]],
    }


async def measure_sopbench(
    make_chat: Any, domain: Any, n_tasks: int, seed: int, turns: int, as_text: bool
) -> dict[str, Any]:
    """The FC agent on ``n_tasks`` stratified tasks with ``turns`` model calls at most."""
    from sopgraph.evals.sopbench.agents import FunctionCallingAgent
    from sopgraph.evals.sopbench.sample import stratified_sample

    offered = {t.name: list(t.input_schema.get("required") or []) for t in domain.tools}
    tasks = stratified_sample(domain, n_tasks, seed)
    rows = []
    began = time.perf_counter()
    totals = ReplyTally(offered)
    agent = FunctionCallingAgent(domain, make_chat([totals]), tool_results_in_user_turns=as_text)
    agent.turns = turns
    async with agent:
        for task in tasks:
            before = totals.figures()
            result = await agent.solve(task)
            after = totals.figures()
            rows.append(
                {
                    "task_id": task.task_id,
                    "completed": result.answer is not None and result.error is None,
                    **{
                        k: after[k] - before[k] for k in ("replies", "valid_calls", "empty_replies")
                    },
                    "seconds": round(result.seconds, 1),
                }
            )
    return {
        "domain": domain.name,
        "tasks": len(rows),
        "seed": seed,
        "turns": turns,
        "completed": sum(r["completed"] for r in rows),
        **totals.figures(),
        "seconds": round(time.perf_counter() - began, 1),
        "per_task": rows,
    }
