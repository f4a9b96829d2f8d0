"""The function-calling router: the functions it offers, the branches it follows, garbage handling."""

from __future__ import annotations

import pytest
from fake_chat import ScriptedChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda
from sop_factory import make_sop

from sopgraph.graphs.executors import ToolContext, Unavailable
from sopgraph.graphs.model import Node, Verdict
from sopgraph.nodes.router import FunctionCallingRouter, RouteFailed, branch_functions
from sopgraph.runtime.runner import Session


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))


def call(*names: str) -> AIMessage:
    return AIMessage(
        "", tool_calls=[{"name": n, "args": {}, "id": f"c{i}"} for i, n in enumerate(names)]
    )


def bound_names(model: ScriptedChatModel) -> list[str]:
    return [t["function"]["name"] for t in model.bound_tools]


def _act(api: str | None = None, text: str = "do it") -> dict:
    node = {"kind": "action", "text": text}
    if api:
        node["api"] = {"name": api, "description": f"{api.replace('_', ' ')}."}
    return node


PERSISTS = "the customer says the problem persists"
RESOLVED = "the customer says the problem is resolved"
DIALOGUE = {
    "id": "dialogue",
    "entry": {"chat": ["ask_status"]},
    "nodes": {
        "ask_status": {
            "kind": "observation",
            "text": "ask the customer whether the problem is resolved",
            "next": {
                "always": ["log_call"],
                "when": [
                    {"if": PERSISTS, "then": ["escalate"]},
                    {"if": RESOLVED, "then": ["close"]},
                ],
            },
        },
        "log_call": _act("log_call"),
        "escalate": _act("escalate_issue_to_technical_support"),
        "close": _act("end_conversation"),
    },
}
ASKED = 'return Verdict(value=True, observed={"asked": True})'
INPUT = {"type": "chat", "messages": [{"role": "user", "content": "it still does not work"}]}


def sop_dir(tmp_path, sop: dict = DIALOGUE, tools: dict | None = None):
    return make_sop(tmp_path / "sop", sop, tools or {"ask_status": ASKED})


async def run(root, model, inp: dict = INPUT, **router_kw):
    async with Session(root, router=FunctionCallingRouter(model, **router_kw), mcp=False) as s:
        return await s.run(inp)


def step_of(result, node_id: str) -> dict:
    return next(s for s in result.trail if s["node"] == node_id)


# -- the functions offered ---------------------------------------------------------------------


def test_distinct_child_apis_are_the_functions():
    nodes = {
        nid: Node(id=nid, **n) for nid, n in DIALOGUE["nodes"].items() if n["kind"] == "action"
    }
    branches, mode = branch_functions([(PERSISTS, ["escalate"]), (RESOLVED, ["close"])], nodes)
    assert mode == "api"
    assert [b.function for b in branches] == [
        "escalate_issue_to_technical_support",
        "end_conversation",
    ]
    assert PERSISTS in branches[0].description and "escalate issue" in branches[0].description


@pytest.mark.parametrize(
    "children",
    [
        {"a": _act("escalate_issue"), "b": _act("escalate_issue")},  # the same API twice
        {"a": _act(), "b": _act()},  # no API at all
        {"a": _act("escalate_issue"), "b": _act()},  # one branch cannot be told by its call
    ],
)
def test_explore_dummies_when_the_calls_cannot_tell_the_branches_apart(children):
    nodes = {nid: Node(id=nid, **n) for nid, n in children.items()}
    branches, mode = branch_functions([(PERSISTS, ["a"]), (RESOLVED, ["b"])], nodes)
    assert mode == "explore"
    assert [(b.function, b.description) for b in branches] == [
        ("explore_subtree_1", PERSISTS),
        ("explore_subtree_2", RESOLVED),
    ]


def test_without_the_child_nodes_the_router_uses_dummies():
    branches, mode = branch_functions([(PERSISTS, ["escalate"])])
    assert mode == "explore" and branches[0].function == "explore_subtree_1"


# -- the branch followed in a compiled run ----------------------------------------------------


async def test_the_chosen_branch_is_followed(tmp_path):
    model = ScriptedChatModel(responses=[call("escalate_issue_to_technical_support")])
    result = await run(sop_dir(tmp_path), model)
    assert result.status == "done", result.unresolved
    assert set(result.path) == {"ask_status", "log_call", "escalate"}
    # only this node's branch functions were offered, plus "none holds"
    assert bound_names(model) == [
        "escalate_issue_to_technical_support",
        "end_conversation",
        "no_condition_holds",
    ]
    prompt = "\n".join(str(m.content) for m in model.seen[0])
    assert "Latest user message: it still does not work" in prompt
    assert "ask the customer whether the problem is resolved" in prompt and PERSISTS in prompt
    route = step_of(result, "ask_status")["route"]
    assert route["mode"] == "api" and route["calls"] == [["escalate_issue_to_technical_support"]]
    assert route["branches"] == [PERSISTS]
    assert route["input_tokens"] > 0 and route["output_tokens"] > 0


async def test_dummy_functions_route_when_children_have_no_api(tmp_path):
    sop = {**DIALOGUE, "nodes": {**DIALOGUE["nodes"], "escalate": _act(), "close": _act()}}
    model = ScriptedChatModel(responses=[call("explore_subtree_2")])
    result = await run(sop_dir(tmp_path, sop), model)
    assert set(result.path) == {"ask_status", "log_call", "close"}
    assert bound_names(model) == ["explore_subtree_1", "explore_subtree_2", "no_condition_holds"]
    descriptions = [t["function"]["description"] for t in model.bound_tools]
    assert descriptions[:2] == [PERSISTS, RESOLVED]


async def test_several_calls_fire_several_branches(tmp_path):
    model = ScriptedChatModel(
        responses=[call("end_conversation", "escalate_issue_to_technical_support")]
    )
    result = await run(sop_dir(tmp_path), model)
    assert set(result.path) == {"ask_status", "log_call", "escalate", "close"}
    assert step_of(result, "ask_status")["route"]["branches"] == [PERSISTS, RESOLVED]


async def test_no_condition_holds_fires_no_branch(tmp_path):
    model = ScriptedChatModel(responses=[call("no_condition_holds")])
    result = await run(sop_dir(tmp_path), model)
    assert result.status == "done" and set(result.path) == {"ask_status", "log_call"}
    assert step_of(result, "ask_status")["fired"] == ["log_call"]


CHAIN = {
    "id": "chain",
    "entry": {"chat": ["first"]},
    "nodes": {
        "first": {
            "kind": "observation",
            "text": "first question",
            "next": {
                "when": [
                    {"if": "the answer is yes", "then": ["second"]},
                    {"if": "the answer is no", "then": ["stop_a"]},
                ]
            },
        },
        "second": {
            "kind": "observation",
            "text": "second question",
            "next": {
                "when": [
                    {"if": "the customer is angry", "then": ["calm"]},
                    {"if": "the customer is calm", "then": ["stop_b"]},
                ]
            },
        },
        "stop_a": _act("stop_here"),
        "calm": _act("calm_customer"),
        "stop_b": _act("thank_customer"),
    },
}


async def test_each_decision_binds_only_the_current_nodes_functions(tmp_path):
    model = ScriptedChatModel()
    bound_per_call: list[list[str]] = []
    replies = iter([call("explore_subtree_1"), call("calm_customer")])

    def responder(messages):
        bound_per_call.append(bound_names(model))
        return next(replies)

    model.responder = responder
    tools = {"first": "return Verdict(value=True)", "second": "return Verdict(value=True)"}
    result = await run(make_sop(tmp_path / "sop", CHAIN, tools), model, {"type": "chat"})
    assert result.status == "done", result.unresolved
    assert result.path == ["first", "second", "calm"]
    # "second" has no API, so the first decision needs dummies; the second has two distinct APIs
    assert bound_per_call == [
        ["explore_subtree_1", "explore_subtree_2", "no_condition_holds"],
        ["calm_customer", "thank_customer", "no_condition_holds"],
    ]


# -- garbage: retry once with a correction, then a clear unresolved reason ----------------------


@pytest.mark.parametrize(
    "garbage,shown",
    [
        (AIMessage("I think the customer is unhappy."), "text 'I think the customer is unhappy.'"),
        (call("delete_everything"), "calls delete_everything"),
        (AIMessage(""), "an empty reply"),
    ],
)
async def test_garbage_twice_is_unresolved_with_a_clear_reason(tmp_path, garbage, shown):
    model = ScriptedChatModel(responses=[garbage])
    result = await run(sop_dir(tmp_path), model)
    assert result.status == "unresolved"
    assert set(result.path) == {"ask_status", "log_call"}  # the verdict's own edges still fire
    reason = result.unresolved["ask_status"]
    assert reason.startswith("router failed: the model chose no offered function in 2 replies")
    assert shown in reason and "escalate_issue_to_technical_support" in reason
    assert len(model.seen) == 2
    correction = str(model.seen[1][-1].content)
    assert "not usable" in correction and shown in correction
    route = step_of(result, "ask_status")["route"]
    assert route["turns"] == 2 and route["input_tokens"] > 0


async def test_garbage_then_a_valid_call_is_followed(tmp_path):
    model = ScriptedChatModel(responses=[AIMessage("hmm"), call("end_conversation")])
    result = await run(sop_dir(tmp_path), model)
    assert result.status == "done" and "close" in result.path
    assert step_of(result, "ask_status")["route"]["calls"] == [[], ["end_conversation"]]


async def test_a_valid_call_next_to_an_unknown_one_is_kept(tmp_path):
    model = ScriptedChatModel(responses=[call("made_up", "end_conversation")])
    result = await run(sop_dir(tmp_path), model)
    assert result.status == "done" and "close" in result.path and "escalate" not in result.path


async def test_a_rejected_tool_choice_is_asked_again_without_it(tmp_path):
    model = ScriptedChatModel(responses=[call("end_conversation")])
    plain_bind = model.bind_tools
    asked: list[object] = []

    def bind_tools(tools, **kwargs):  # llama.cpp's server answers 500 to tool_choice="required"
        asked.append(kwargs.get("tool_choice"))
        if kwargs.get("tool_choice"):
            return RunnableLambda(
                lambda _: (_ for _ in ()).throw(ValueError("500: assert tool_choice"))
            )
        return plain_bind(tools)

    object.__setattr__(model, "bind_tools", bind_tools)
    router = FunctionCallingRouter(model)
    async with Session(sop_dir(tmp_path), router=router, mcp=False) as s:
        first = await s.run(INPUT)
        second = await s.run(INPUT)
    assert "close" in first.path and "close" in second.path
    assert asked == ["any", None, None]  # asked without it from then on
    assert "ValueError" in step_of(first, "ask_status")["route"]["tool_choice_rejected"]


async def test_a_failing_model_call_is_a_clear_reason(tmp_path):
    def responder(messages):
        raise ConnectionError("connection refused\n  at 127.0.0.1:1")

    result = await run(sop_dir(tmp_path), ScriptedChatModel(responder=responder))
    reason = result.unresolved["ask_status"]
    assert reason == "router failed: the model call failed: ConnectionError: connection refused"


# -- without a model ---------------------------------------------------------------------------


async def test_without_a_model_the_router_is_unavailable(tmp_path):
    ctx = ToolContext(node_id="n", text="t", params={}, parents={}, input={}, run_id="r")
    with pytest.raises(Unavailable, match="no chat model"):
        await FunctionCallingRouter(None).choose(
            Node(id="n", kind="observation"), Verdict(value=True), [(PERSISTS, ["x"])], ctx
        )
    result = await run(sop_dir(tmp_path), None)
    assert result.unresolved["ask_status"].startswith("router unavailable: no chat model")


async def test_route_failed_keeps_the_detail():
    ctx = ToolContext(node_id="n", text="t", params={}, parents={}, input={}, run_id="r")
    router = FunctionCallingRouter(ScriptedChatModel(responses=[AIMessage("no")]), retries=0)
    with pytest.raises(RouteFailed) as info:
        await router.choose(
            Node(id="n", kind="observation"), Verdict(value=True), [(PERSISTS, ["x"])], ctx
        )
    assert info.value.detail["turns"] == 1 and info.value.detail["offered"] == [
        "explore_subtree_1",
        "no_condition_holds",
    ]


async def test_without_the_none_option_a_none_call_is_garbage(tmp_path):
    model = ScriptedChatModel(responses=[call("no_condition_holds")])
    result = await run(sop_dir(tmp_path), model, allow_none=False)
    assert bound_names(model) == ["escalate_issue_to_technical_support", "end_conversation"]
    assert "calls no_condition_holds" in result.unresolved["ask_status"]
