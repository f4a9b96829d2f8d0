"""The LLM-agent baseline for the enterprise task set: issue 26's FC and ReAct agents given
the enterprise server's tools (started as the persona, so the server's access policy holds
for them as for the compiled path) and the task's question, answering through a typed answer.

The answer action has an ``outcome`` (``answered``, ``refused`` when a tool said ``access
denied``, ``not_available`` when the data has no such thing) and the ``answer`` as text. A task
is scored against its ``expected`` (``score``):

- ``refused`` expected: the agent says ``refused``; ``error`` expected (no such field): it says
  ``not_available``; an ``unanswerable`` task expecting an empty search (0 rows) takes
  ``not_available`` or the count;
- a question: ``answered`` with the value (numbers as numbers, lists as sets of ids, text
  case-blind); for a task the compiled SOP answers, the value is the check's observed value or
  the yes/no its action means;
- a change (create, update, close): ``answered``, and the change made: a successful call of
  the task's tool whose result holds the expected value (``call.pick``), or for the SOP's
  ticket close a successful ``close_ticket`` of that ticket (``agent_effect``).

Run ``python -m sopgraph.evals.enterprise_tasks --agent fc`` (with ``SOPGRAPH_MODEL``).
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from sopgraph.evals.sopbench.agents import (
    REACT_NOTE,
    FunctionCallingAgent,
    ReActAgent,
    offering_tools,
    results_as_user_turns,
)
from sopgraph.evals.sopbench.answer_schema import REASONING
from sopgraph.graphs.idempotency import acting
from sopgraph.nodes.agent_middleware import ANSWER_TOOL
from sopgraph.nodes.mcp import ServerConfig

OUTCOMES = ("answered", "refused", "not_available")
KEPT_CHARS = 1000  # of each tool result, in a task's record
COLUMNS = ["outcome", "answer"]
SYSTEM = """You are the company's internal assistant. You act for employee {persona}; the
tools act as that employee and the server decides what they may see or change.

Use the tools to answer the employee's request, or to make the change it asks for. Then call
the `answer` tool:
- outcome "answered" with the answer (a number, an id, a status, or ids separated by commas;
  for a change, what the changed record now says);
- outcome "refused" when a tool said "access denied" for what the request needs;
- outcome "not_available" when the company's data has no such thing."""
# the yes/no a compiled SOP's action means, for the questions the SOP answers
ACTION_MEANS = {
    "act_answer_above": "yes",
    "act_answer_not_above": "no",
    "act_approve_leave": "yes",
    "act_decline_leave": "no",
}


def answer_schema() -> type[BaseModel]:
    fields: dict[str, Any] = {
        REASONING: (str, Field(description="first, in one short sentence: what the tools said")),
        "outcome": (Literal[OUTCOMES], Field(description="answered, refused or not_available")),
        "answer": (str, Field(description="the value asked for; empty unless answered")),
    }
    return create_model(ANSWER_TOOL, __doc__="The final answer to the request.", **fields)


def server(persona: str, audit: Path) -> ServerConfig:
    return ServerConfig(
        command=sys.executable,
        args=["-m", "sopgraph.mcp_servers.enterprise", "--as", persona, "--audit", str(audit)],
    )


class _EnterpriseAgent:
    """Mixed into the FC or ReAct agent: the enterprise server instead of a SOP-Bench domain."""

    result_chars = None  # whole results: a change is scored on the record the tool returned

    def __init__(self, persona: str, model: Any, audit: Path, *, as_text: bool = False):
        self.domain = None
        self.persona = persona
        self.columns = COLUMNS
        self.model = offering_tools(model)
        self.as_text = as_text
        self.config = server(persona, audit)
        self.tools: list[Any] = []
        self._stack = AsyncExitStack()

    def system(self) -> str:
        react = self.react  # type: ignore[attr-defined]
        return SYSTEM.format(persona=self.persona) + (REACT_NOTE if react else "")

    def schema(self) -> type[BaseModel]:
        return answer_schema()

    def prompt(self, task: dict[str, Any]) -> str:
        return task["question"]


class EnterpriseFC(_EnterpriseAgent, FunctionCallingAgent):
    name = "fc"


class EnterpriseReAct(_EnterpriseAgent, ReActAgent):
    name = "react"


AGENTS = {"fc": EnterpriseFC, "react": EnterpriseReAct}


def _number(text: str) -> float | None:
    m = re.search(r"-?\d[\d,]*(?:\.\d+)?", text)
    return float(m.group().replace(",", "")) if m else None


def same_value(got: str, want: Any) -> bool:
    """``got`` (the agent's text) says ``want`` (a number, a list of ids, or a word)."""
    got = got.strip().strip(".").strip()
    if isinstance(want, bool) or want is None:
        return False
    if isinstance(want, int | float):
        return _number(got) == float(want)
    if isinstance(want, list):
        return {w.strip().strip("'\"[]") for w in re.split(r"[,\s]+", got) if w.strip("'\"[]")} == {
            str(w) for w in want
        }
    return got.lower() == str(want).lower()


def _effect(steps: list[dict[str, Any]], tool: str, args: dict[str, Any] | None = None) -> list:
    """The parsed results of the successful calls of ``tool`` (with ``args`` among theirs)."""
    out = []
    for step in steps:
        if step["tool"] != tool or not step.get("result"):
            continue
        if args and any(str(step["args"].get(k)) != str(v) for k, v in args.items()):
            continue
        try:
            out.append(json.loads(step["result"]))
        except ValueError:  # an error's text, not a record
            continue
    return out


def score(task: dict[str, Any], got: dict[str, Any]) -> bool:
    """The agent's ``got`` (``outcome``, ``answer``, ``steps``) is right for ``task``."""
    want = task["expected"]
    outcome = got.get("outcome")
    if want["outcome"] == "refused":
        return outcome == "refused"
    if want["outcome"] == "error":
        return outcome == "not_available"
    if task["category"] == "unanswerable" and outcome == "not_available":
        return True
    if outcome != "answered":
        return False
    if task["category"] == "create_update_delete":
        effect = task.get("agent_effect") or task["call"]
        made = _effect(got.get("steps", []), effect["tool"], effect.get("args") if
                       "agent_effect" in task else None)  # fmt: skip
        if "agent_effect" in task:
            return bool(made)
        # the changed record's field (a task's ``call.pick`` names a top-level one)
        return any(isinstance(r, dict) and r.get(effect["pick"]) == want["answer"] for r in made)
    if "answer" in want:
        return same_value(got.get("answer", ""), want["answer"])
    answer = got.get("answer", "")
    return same_value(answer, want["observed"]) or answer.strip(" .").lower() == ACTION_MEANS.get(
        want.get("action"), "\0"
    )


async def run_persona(
    kind: str, persona: str, tasks: list[dict[str, Any]], home: Path, model: Any, as_text: bool
) -> list[dict[str, Any]]:
    out = []
    audit = home / "enterprise-audit.jsonl"
    async with AGENTS[kind](persona, model, audit, as_text=as_text) as agent:
        for task in tasks:
            start = time.perf_counter()
            with acting(f"task/{task['id']}"):  # the persona's own request, not a decision
                result = await agent.solve(task)
            got: dict[str, Any] = {
                **(result.answer or {"outcome": None, "answer": ""}),
                "error": result.error,
                "steps": result.steps,
                "tokens": result.tokens["total_tokens"],
                "seconds": round(time.perf_counter() - start, 1),
                "turns": result.turns,
                "forced_by": result.forced_by,
            }
            correct = score(task, got)  # on the whole results; the record keeps their start
            got["steps"] = [
                {**st, "result": (st["result"] or "")[:KEPT_CHARS]} for st in got["steps"]
            ]
            out.append({**task, "path": f"agent:{kind}", "got": got, "correct": correct})
            print(
                f"  {task['id']} {persona}: {got['outcome']} {got['answer']!r} "
                f"{'ok' if out[-1]['correct'] else 'WRONG'} ({got['seconds']} s, "
                f"{got['tokens']} tokens)",
                file=sys.stderr,
                flush=True,
            )
    return out


async def run_agent(kind: str, tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from sopgraph.nodes.models import chat_model

    as_text = results_as_user_turns()
    model = chat_model()
    by_persona: dict[str, list[dict[str, Any]]] = {}
    for task in tasks:
        by_persona.setdefault(task["persona"], []).append(task)
    results = []
    with tempfile.TemporaryDirectory() as home:
        for persona, some in by_persona.items():
            results += await run_persona(kind, persona, some, Path(home), model, as_text)
    return results
