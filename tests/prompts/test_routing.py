"""The DSPy router and the condition judge on DummyLM, alone and in compiled runs."""

from __future__ import annotations

import dspy
import pytest
from dspy.utils import DummyLM
from sop_factory import make_sop

from sopgraph.graphs.executors import ToolContext, Unavailable
from sopgraph.graphs.model import Node, Verdict
from sopgraph.nodes.judge import JudgeExecutor, is_free_text_condition
from sopgraph.nodes.router import DSPyRouter, RouteFailed
from sopgraph.prompts.judge import ConditionJudge, JudgeError, NoJudgeModel, judge_match
from sopgraph.prompts.routing import numbered_conditions, render_context
from sopgraph.runtime.runner import Session

PERSISTS = "the customer says the problem persists"
RESOLVED = "the customer says the problem is resolved"
CONDITIONS = [(PERSISTS, ["escalate"]), (RESOLVED, ["close", "survey"])]
DIALOGUE = {
    "messages": [
        {"role": "assistant", "content": "Is the problem resolved?"},
        {"role": "user", "content": "no, it still drops every hour"},
    ]
}


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))


def ctx(inp: dict | None = None, text: str = "ask whether the problem is resolved") -> ToolContext:
    return ToolContext(node_id="n", text=text, params={}, parents={}, input=inp or {}, run_id="r")


NODE = Node(id="ask", kind="observation", text="ask whether the problem is resolved")


def last_prompt(lm: DummyLM) -> str:
    return "\n".join(str(m["content"]) for m in lm.history[-1]["messages"])


# -- rendering ---------------------------------------------------------------------------------


def test_context_shows_the_latest_user_message_first():
    text = render_context({**DIALOGUE, "site": "FC1"})
    assert text.startswith("Latest user message: no, it still drops every hour")
    assert "assistant: Is the problem resolved?" in text and '"site": "FC1"' in text
    assert render_context({}) == "(none)"
    assert render_context({"message": "hello"}) == "Latest user message: hello"


def test_context_is_clipped_keeping_the_latest_turns():
    turns = [{"role": "user", "content": f"turn {i} " + "x" * 50} for i in range(40)]
    text = render_context({"messages": turns}, limit=500)
    assert len(text) <= 500 and "turn 39" in text and "turn 0 " not in text


def test_numbered_conditions():
    assert numbered_conditions([PERSISTS, RESOLVED]) == f"1. {PERSISTS}\n2. {RESOLVED}"


# -- the DSPy router ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "chosen,children",
    [
        ("[1]", ["escalate"]),
        ("[2]", ["close", "survey"]),
        ("[2, 1]", ["close", "survey", "escalate"]),
        ("[]", []),
    ],
)
async def test_dspy_router_maps_branch_numbers_to_children(chosen, children):
    lm = DummyLM([{"chosen": chosen}])
    decision = await DSPyRouter(lm=lm).choose(NODE, Verdict(value=True), CONDITIONS, ctx(DIALOGUE))
    assert decision.children == children
    assert decision.detail["router"] == "dspy"
    prompt = last_prompt(lm)
    assert f"1. {PERSISTS}" in prompt and f"2. {RESOLVED}" in prompt
    assert "Latest user message: no, it still drops every hour" in prompt


@pytest.mark.parametrize("chosen", ["[3]", "[0]"])
async def test_dspy_router_rejects_numbers_outside_the_branches(chosen):
    with pytest.raises(RouteFailed, match="not branch numbers between 1 and 2"):
        await DSPyRouter(lm=DummyLM([{"chosen": chosen}])).choose(
            NODE, Verdict(value=True), CONDITIONS, ctx()
        )


async def test_dspy_router_unparsable_reply_is_route_failed():
    with pytest.raises(RouteFailed, match="could not be parsed"):
        await DSPyRouter(lm=DummyLM([{"chosen": "the first one"}])).choose(
            NODE, Verdict(value=True), CONDITIONS, ctx()
        )


async def test_dspy_router_without_an_lm_is_unavailable():
    with pytest.raises(Unavailable, match="no DSPy LM"):
        await DSPyRouter().choose(NODE, Verdict(value=True), CONDITIONS, ctx())


async def test_dspy_router_uses_the_configured_lm():
    dspy.settings.configure(lm=DummyLM([{"chosen": "[1]"}]))
    decision = await DSPyRouter().choose(NODE, Verdict(value=True), CONDITIONS, ctx())
    assert decision.children == ["escalate"]


def test_dspy_router_is_optimizable():
    train = [
        dspy.Example(
            node_text="ask", observed="verdict: true", context=c, branches=b, chosen=[1]
        ).with_inputs("node_text", "observed", "context", "branches")
        for c, b in [("user: still broken", numbered_conditions([PERSISTS, RESOLVED]))]
    ]
    compiled = dspy.LabeledFewShot(k=1).compile(DSPyRouter(), trainset=train)
    assert [name for name, _ in compiled.named_predictors()] == ["choose_branch"]
    assert len(compiled.choose_branch.demos) == 1


SOP = {
    "id": "dialogue",
    "entry": {"chat": ["problem_persists"]},
    "nodes": {
        # no API, no data: a free-text condition only the dialogue decides
        "problem_persists": {
            "kind": "observation",
            "text": "the customer says the problem persists",
            "next": {"true": ["ask_details"], "false": ["close"]},
        },
        "ask_details": {
            "kind": "observation",
            "text": "ask what the customer tried",
            "next": {
                "when": [
                    {"if": "the customer restarted the modem", "then": ["escalate"]},
                    {"if": "the customer did nothing yet", "then": ["guide"]},
                ]
            },
        },
        "escalate": {"kind": "action", "text": "escalate"},
        "guide": {"kind": "action", "text": "guide through troubleshooting"},
        "close": {"kind": "action", "text": "close"},
    },
}


async def test_judge_and_dspy_router_drive_a_compiled_run(tmp_path):
    root = make_sop(tmp_path / "sop", SOP, {"ask_details": "return Verdict(value=True)"})
    judge_lm = DummyLM([{"holds": "True", "rationale": "the customer says it still drops"}])
    router_lm = DummyLM([{"chosen": "[2]"}])
    async with Session(
        root, executors=[JudgeExecutor(lm=judge_lm)], router=DSPyRouter(lm=router_lm), mcp=False
    ) as s:
        result = await s.run({"type": "chat", **DIALOGUE})
    assert result.status == "done", result.unresolved
    assert result.path == ["problem_persists", "ask_details", "guide"]
    judged = result.trail[0]
    assert judged["executor"] == "judge" and judged["verdict"] == "true"
    assert judged["explanation"] == "the customer says it still drops"
    assert [a["executor"] for a in judged["attempts"]] == ["tool"]  # no tool: the judge took over
    assert result.trail[1]["route"]["branches"] == ["the customer did nothing yet"]


async def test_without_an_lm_judge_and_router_leave_clear_reasons(tmp_path):
    root = make_sop(tmp_path / "sop", SOP, {"ask_details": "return Verdict(value=True)"})
    async with Session(root, executors=[JudgeExecutor()], router=DSPyRouter(), mcp=False) as s:
        result = await s.run({"type": "chat"})
    assert result.status == "unresolved" and result.path == ["problem_persists"]
    assert "judge: no DSPy LM is configured" in result.unresolved["problem_persists"]


# -- the condition judge -------------------------------------------------------------------------


@pytest.mark.parametrize("answer,holds", [("True", True), ("false", False)])
def test_judge_reads_holds(answer, holds):
    lm = DummyLM([{"holds": answer, "rationale": "because"}])
    pred = ConditionJudge(lm=lm).judge(PERSISTS, render_context(DIALOGUE))
    assert pred.holds is holds and pred.rationale == "because"
    assert PERSISTS in last_prompt(lm) and "still drops every hour" in last_prompt(lm)


def test_judge_garbage_and_no_lm_are_one_line_errors():
    with pytest.raises(JudgeError, match="could not be parsed"):
        ConditionJudge(lm=DummyLM([{"holds": "perhaps", "rationale": "?"}])).judge(PERSISTS, "")
    with pytest.raises(NoJudgeModel):
        ConditionJudge().judge(PERSISTS, "")


def test_judge_metric():
    ex = dspy.Example(condition=PERSISTS, context="", holds=True)
    assert judge_match(ex, dspy.Prediction(holds=True)) and not judge_match(
        ex, dspy.Prediction(holds=False)
    )


async def test_judge_executor_decides_free_text_nodes_only():
    lm = DummyLM([{"holds": "false", "rationale": "the customer says it works now"}])
    executor = JudgeExecutor(lm=lm)
    outcome = await executor.decide(NODE, ctx({"message": "it works now, thanks"}))
    assert outcome.verdict.value == "false" and outcome.executor == "judge"
    assert outcome.detail["judge"] == {
        "holds": False,
        "rationale": "the customer says it works now",
    }
    with_data = Node(
        id="idle", kind="observation", text="idle above 25%", data=["robotics.idle_pct"]
    )
    with_api = Node(id="auth", kind="observation", text="auth", api={"name": "authenticate"})
    for node in (with_data, with_api, Node(id="act", kind="action")):
        assert not is_free_text_condition(node)
        with pytest.raises(Unavailable, match="not a free-text condition"):
            await executor.decide(node, ctx())


async def test_judge_executor_garbage_is_a_failure_not_a_verdict():
    executor = JudgeExecutor(lm=DummyLM([{"holds": "unclear", "rationale": "?"}]))
    with pytest.raises(Exception, match="could not be parsed") as info:
        await executor.decide(NODE, ctx())
    assert not isinstance(info.value, Unavailable)
