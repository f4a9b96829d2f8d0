"""The tool-calling sub-agent (``create_agent`` with a typed answer), driven by scripted models
over a real compiled tool and MCP server (tests/servers)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import pytest_asyncio
from fake_chat import ScriptedChatModel
from langchain.agents.middleware import ModelRequest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sop_factory import make_sop

from sopgraph.graphs import telemetry
from sopgraph.graphs.executors import ToolContext
from sopgraph.graphs.model import Node
from sopgraph.nodes.agent_middleware import CallFirst
from sopgraph.nodes.mcp import McpPool, ServerConfig
from sopgraph.nodes.subagent import SubAgentFailed, SubAgentToolExecutor
from sopgraph.tools.invocation_log import InvocationLog
from sopgraph.tools.registry import Registry

SERVER = Path(__file__).resolve().parents[1] / "servers" / "toy_metrics.py"
shared_loop = pytest.mark.asyncio(loop_scope="module")  # the loop the module's pool lives in
TEXT = "The station was idle more than 25% of the last 15 minutes."
TOOL = """
r = await ctx.mcp.call("robotics", "execute_query", {"metric": "station_idle_pct", "site": input["site"]})
return Verdict(value=r["value"] > 25, observed=r["value"], threshold=25, explanation="idle above 25%")
"""
SOP = {"id": "sub", "nodes": {"obs_idle": {"kind": "observation", "text": TEXT}}}
RUN = {"name": "run_obs_idle", "args": {}, "id": "c1"}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pool():
    servers = {"robotics": ServerConfig(command=sys.executable, args=[str(SERVER), "--name", "robotics"])}  # fmt: skip
    async with McpPool(servers) as p:
        yield p


def _setup(tmp_path: Path, tool: str = TOOL) -> tuple[Registry, InvocationLog]:
    root = make_sop(tmp_path / "sop", SOP, {"obs_idle": tool})
    return Registry(root / "tools", sop_id="sub"), InvocationLog(tmp_path / "log.sqlite")


def _ctx(pool) -> tuple[Node, ToolContext]:
    node = Node(id="obs_idle", kind="observation", text=TEXT)
    ctx = ToolContext(
        node_id=node.id, text=TEXT, params={}, parents={}, input={"site": "FC1"},
        run_id="t1", mcp=pool, node=node,
    )  # fmt: skip
    return node, ctx


def _answer(
    verdict: str, observed: float | None = 31.2, why: str = "idle 31.2% > 25%"
) -> AIMessage:
    args = {"verdict": verdict, "observed": observed, "explanation": why}
    return AIMessage("", tool_calls=[{"name": "answer", "args": args, "id": "a1"}])


def _names(tools) -> list[str]:
    return [t.name if hasattr(t, "name") else t["function"]["name"] for t in tools]


@shared_loop
async def test_the_tool_is_called_then_the_typed_answer_is_the_verdict(pool, tmp_path, monkeypatch):
    registry, log = _setup(tmp_path)
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[RUN]), _answer("true")])
    bound: list[list[str]] = []  # the tools of every model call (the recorder keeps the last)
    bind_tools = ScriptedChatModel.bind_tools

    def spy(self, tools, **kwargs):
        bound.append(_names(tools))
        return bind_tools(self, tools, **kwargs)

    monkeypatch.setattr(ScriptedChatModel, "bind_tools", spy)
    outcome = await SubAgentToolExecutor(model, registry, log).decide(*_ctx(pool))

    assert bound == [["run_obs_idle"], ["answer"]]  # first only the tool, then only the answer
    v = outcome.verdict
    assert (v.value, v.observed, v.threshold) == ("true", 31.2, 25)
    assert v.explanation == "idle 31.2% > 25%" and outcome.tool_version == 1
    d = outcome.detail
    assert d["turns"] == 2 and d["agrees_with_tool"] and "extract" not in d
    assert d["answer"] == {"verdict": "true", "observed": 31.2, "explanation": "idle 31.2% > 25%"}
    assert d["tool_verdict"]["value"] == "true" and d["input_tokens"] > 0 < d["output_tokens"]
    tool_result = [m for m in model.seen[1] if isinstance(m, ToolMessage)]
    assert '"observed": 31.2' in tool_result[0].content
    assert len(log.query(node="obs_idle")) == 1


@shared_loop
async def test_the_tool_runs_once_even_if_called_twice(pool, tmp_path):
    registry, log = _setup(tmp_path)
    twice = AIMessage("", tool_calls=[RUN, {**RUN, "id": "c2"}])
    model = ScriptedChatModel(responses=[twice, AIMessage("", tool_calls=[{**RUN, "id": "c3"}]),
                                         _answer("true")])  # fmt: skip
    outcome = await SubAgentToolExecutor(model, registry, log).decide(*_ctx(pool))

    assert outcome.verdict.value == "true" and len(log.query(node="obs_idle")) == 1
    # the repeat in the second reply got the earlier result, with the loop guard's note
    repeat = [m for m in model.seen[-1] if isinstance(m, ToolMessage) and m.tool_call_id == "c3"]
    assert "not run again" in repeat[0].content and outcome.detail["forced_by"] == "repeat"


@shared_loop
async def test_an_answer_against_the_tool_is_reported_as_said(pool, tmp_path):
    registry, log = _setup(tmp_path)
    model = ScriptedChatModel(
        responses=[AIMessage("", tool_calls=[RUN]), _answer("false", 3.0, "barely idle")]
    )
    outcome = await SubAgentToolExecutor(model, registry, log).decide(*_ctx(pool))

    v = outcome.verdict
    assert v.value == "false" and v.observed == 31.2 and v.explanation == "barely idle"
    assert outcome.detail["agrees_with_tool"] is False
    assert outcome.detail["tool_verdict"]["value"] == "true"


@shared_loop
async def test_a_model_that_never_calls_the_tool_fails(pool, tmp_path):
    registry, log = _setup(tmp_path)
    model = ScriptedChatModel(responses=[_answer("true")])  # answers without looking
    with pytest.raises(SubAgentFailed, match="never called run_obs_idle in 4 model calls") as err:
        await SubAgentToolExecutor(model, registry, log).decide(*_ctx(pool))

    assert err.value.detail["turns"] == 4 and log.query(node="obs_idle") == []


@shared_loop
async def test_a_model_that_never_answers_fails(pool, tmp_path):
    registry, log = _setup(tmp_path)
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[RUN]), AIMessage("")])
    with pytest.raises(SubAgentFailed, match="no answer after run_obs_idle in 2 model calls"):
        await SubAgentToolExecutor(model, registry, log).decide(*_ctx(pool))


@shared_loop
async def test_a_raising_tool_propagates_for_the_fallback(pool, tmp_path):
    registry, log = _setup(tmp_path, "raise RuntimeError('metric store timed out')")
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[RUN]), _answer("true")])
    with pytest.raises(RuntimeError, match="metric store timed out"):
        await SubAgentToolExecutor(model, registry, log).decide(*_ctx(pool))


async def test_call_first_forces_the_tool_then_only_the_answer():
    class Tool:
        def __init__(self, name: str) -> None:
            self.name = name

    seen: list[ModelRequest] = []

    async def handler(request):
        seen.append(request)

    request = ModelRequest(
        model=ScriptedChatModel(), messages=[HumanMessage("decide")],
        tools=[Tool("run_x"), Tool("other")], response_format="schema",
    )  # fmt: skip
    middleware = CallFirst("run_x")
    await middleware.awrap_model_call(request, handler)
    result = ToolMessage("{}", tool_call_id="c1", name="run_x")
    await middleware.awrap_model_call(
        request.override(messages=[*request.messages, result]), handler
    )

    first, second = seen
    assert _names(first.tools) == ["run_x"] and first.tool_choice == "run_x"
    assert first.response_format is None
    assert second.tools == [] and second.response_format == "schema"


@shared_loop
async def test_the_agent_span_holds_one_chat_span_a_model_call(pool, tmp_path):
    registry, log = _setup(tmp_path)
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[RUN]), _answer("true")])
    exporter = InMemorySpanExporter()
    telemetry.setup_tracing(exporter=exporter)
    try:
        outcome = await SubAgentToolExecutor(model, registry, log).decide(*_ctx(pool))
    finally:
        telemetry.shutdown_tracing()

    spans = exporter.get_finished_spans()
    (agent,) = [s for s in spans if s.name == "invoke_agent subagent"]
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert len(chats) == 2 and {c.parent.span_id for c in chats} == {agent.context.span_id}
    d = outcome.detail
    assert agent.attributes["gen_ai.usage.input_tokens"] == d["input_tokens"]
    assert sum(c.attributes["gen_ai.usage.output_tokens"] for c in chats) == d["output_tokens"]
