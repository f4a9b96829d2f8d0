"""The real SmolLM2-135M routes a branch and judges a condition through the real HTTP server.

A 135M model is not expected to choose well; what must hold is the plumbing: the calls it
makes are among the functions offered and are followed, and anything else ends in a clear
unresolved reason with the tokens spent kept in the trail.
"""

from __future__ import annotations

import time

import pytest
from sop_factory import make_sop

from sopgraph.nodes.judge import JudgeExecutor
from sopgraph.nodes.models import (
    LocalModelUnavailable,
    Settings,
    chat_model,
    dspy_lm,
    ensure_installed,
    shared_server,
)
from sopgraph.nodes.router import FunctionCallingRouter
from sopgraph.runtime.runner import Session

pytestmark = pytest.mark.local_llm

try:
    ensure_installed("smollm2")
except LocalModelUnavailable as exc:
    pytest.skip(str(exc), allow_module_level=True)


@pytest.fixture(scope="module")
def local() -> Settings:
    """``model=local`` with the process-wide server already started (once)."""
    shared_server(Settings(model="local:smollm2"))
    return Settings(model="local:smollm2")


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))


def _act(api: str, description: str) -> dict:
    return {"kind": "action", "text": description, "api": {"name": api, "description": description}}


PERSISTS = "the customer says the problem persists"
RESOLVED = "the customer says the problem is resolved"
SOP = {
    "id": "local_dialogue",
    "entry": {"chat": ["problem_persists"]},
    "nodes": {
        # no API, no data: the judge decides it from the dialogue
        "problem_persists": {
            "kind": "observation",
            "text": PERSISTS,
            "next": {"always": ["ask_status"]},
        },
        "ask_status": {
            "kind": "observation",
            "text": "ask the customer whether the internet connection works again",
            "next": {
                "when": [
                    {"if": PERSISTS, "then": ["escalate"]},
                    {"if": RESOLVED, "then": ["close"]},
                ]
            },
        },
        "escalate": _act("escalate_issue", "Escalate the issue to technical support."),
        "close": _act("end_conversation", "End the conversation politely."),
    },
}
INPUT = {
    "type": "chat",
    "messages": [
        {"role": "assistant", "content": "Does your internet connection work again?"},
        {"role": "user", "content": "No, it still does not work at all."},
    ],
}
BRANCH_OF = {"escalate_issue": "escalate", "end_conversation": "close"}


async def test_smollm2_router_makes_a_well_formed_choice_or_says_why_not(tmp_path, local):
    tools = {
        "problem_persists": "return Verdict(value=True)",
        "ask_status": "return Verdict(value=True)",
    }
    root = make_sop(tmp_path / "sop", SOP, tools)
    # a function call is a few tokens; a rambling text reply is cut short
    router = FunctionCallingRouter(chat_model(local, max_tokens=64))
    began = time.perf_counter()
    async with Session(root, router=router, mcp=False) as s:
        result = await s.run(INPUT)
    print(f"\nrouted with the local model in {time.perf_counter() - began:.1f} s")
    step = next(step for step in result.trail if step["node"] == "ask_status")
    route = step["route"]
    print("calls:", route["calls"], "unresolved:", result.unresolved.get("ask_status"))
    offered = ["escalate_issue", "end_conversation", "no_condition_holds"]
    assert route["mode"] == "api" and route["offered"] == offered
    assert 1 <= route["turns"] <= 2 and route["input_tokens"] > 0 and route["output_tokens"] > 0
    if "ask_status" in result.unresolved:
        reason = result.unresolved["ask_status"]
        assert reason.startswith("router failed: ") and "offered: " + ", ".join(offered) in reason
        assert step["fired"] == []
    else:
        last = route["calls"][-1]
        assert last and set(last) & set(offered)
        expected = {BRANCH_OF[c] for c in last if c in BRANCH_OF}
        assert set(step["fired"]) == expected
        assert set(result.path) == {"problem_persists", "ask_status", *expected}


async def test_smollm2_judge_gives_a_verdict_or_says_why_not(tmp_path, local):
    root = make_sop(tmp_path / "sop", SOP, {"ask_status": "return Verdict(value=True)"})
    judge = JudgeExecutor(lm=dspy_lm(local, max_tokens=96, cache=False))
    began = time.perf_counter()
    async with Session(root, executors=[judge], mcp=False) as s:
        result = await s.run(INPUT)
    print(f"\njudged with the local model in {time.perf_counter() - began:.1f} s")
    step = result.trail[0]
    print("judge:", step.get("verdict"), step.get("explanation") or step.get("error"))
    assert step["node"] == "problem_persists"
    if step["status"] == "decided":
        assert step["executor"] == "judge" and step["verdict"] in ("true", "false")
        assert "ask_status" in result.path
    else:
        reason = result.unresolved["problem_persists"]
        assert "judge: JudgeFailed: the judge's reply could not be parsed" in reason
        assert result.path == ["problem_persists"]
