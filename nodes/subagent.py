"""The tool-calling sub-agent: an LLM that decides a node by calling its compiled tool.

The paper's middle configuration: the main agent delegates the node to a sub-agent whose only
function is ``run_<node>`` (the node's compiled tool, no arguments). It is LangChain's
``create_agent`` with a typed answer (``TypedAnswer`` as an ``answer`` tool): the first model
call may only call ``run_<node>``, the next may only answer (``nodes/agent_middleware``), so a
sub-agent takes two model calls. Its value comes from that answer (so a mis-report shows, as it
would in production); observed value and threshold come from the tool.
"""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import aclosing
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain.agents.structured_output import ToolStrategy
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import StructuredTool
from langgraph.errors import GraphRecursionError
from pydantic import BaseModel, create_model

from sopgraph.graphs.executors import Outcome, ToolContext, Unavailable
from sopgraph.graphs.model import Node, Verdict
from sopgraph.graphs.telemetry import agent_span, chat_span, record_usage
from sopgraph.nodes.agent_middleware import ANSWER_TOOL, CallFirst, ForceAnswer, LoopGuard
from sopgraph.nodes.codeact import NO_MODEL
from sopgraph.nodes.codeact_loop import message_text, model_label
from sopgraph.nodes.local_turns import model_turn
from sopgraph.nodes.tool_node import ToolExecutor
from sopgraph.prompts import subagent as texts
from sopgraph.prompts.codeact import TypedAnswer
from sopgraph.prompts.envelope import role_chat
from sopgraph.prompts.verdict import ExtractionError, VerdictExtractor
from sopgraph.tools.invocation_log import InvocationLog
from sopgraph.tools.registry import Registry, ToolIntegrityError, ToolMissing

DEFAULT_MAX_TURNS = 4  # model calls; the sub-agent needs two

Answer = create_model(ANSWER_TOOL, __base__=TypedAnswer, __doc__=texts.ANSWER_DESCRIPTION)
"""``TypedAnswer`` named ``answer``: the name the answer tool has in the model's prompt."""


class SubAgentFailed(RuntimeError):
    """The sub-agent ended without a usable verdict; ``detail`` keeps its trace and tokens."""

    def __init__(self, reason: str, detail: dict[str, Any]):
        super().__init__(reason)
        self.detail = detail


class _NoArguments(BaseModel):
    """``run_<node>`` takes no arguments: the tool reads the run's input itself."""


class _RunOnce:
    """``run_<node>``: the node's compiled tool, run at most once however often it is called."""

    def __init__(self, tool: ToolExecutor, node: Node, ctx: ToolContext):
        self.tool, self.node, self.ctx = tool, node, ctx
        self.outcome: Outcome | None = None
        self._lock = asyncio.Lock()  # two calls in one reply run concurrently

    async def call(self) -> str:
        async with self._lock:
            if self.outcome is None:
                # a raising tool ends the agent and the executor: the chain falls back
                self.outcome = await self.tool.decide(self.node, self.ctx)
        verdict = self.outcome.verdict
        return json.dumps(verdict.model_dump() if verdict else None, default=str)


class _ChatSpans(AgentMiddleware):
    """A ``chat`` span, with its token usage, around each model call of the agent."""

    def __init__(self, label: str) -> None:
        super().__init__()
        self.label = label

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        with chat_span(self.label) as span:
            response = await handler(request)
            usage = _usage([m for m in response.result if isinstance(m, AIMessage)])
            record_usage(span, usage[0], usage[1], model=self.label)
        return response


def _usage(messages: list[BaseMessage]) -> tuple[int, int]:
    """Input and output tokens of the model replies among ``messages``."""
    n_in = n_out = 0
    for m in messages:
        if isinstance(m, AIMessage):
            usage = m.usage_metadata or {}
            n_in += int(usage.get("input_tokens") or 0)
            n_out += int(usage.get("output_tokens") or 0)
    return n_in, n_out


def _turns(messages: list[BaseMessage]) -> int:
    return sum(isinstance(m, AIMessage) for m in messages)


def _trace(messages: list[BaseMessage]) -> dict[str, Any]:
    replies = [m for m in messages if isinstance(m, AIMessage)]
    n_in, n_out = _usage(replies)
    return {
        "turns": len(replies),
        "input_tokens": n_in,
        "output_tokens": n_out,
        "replies": [message_text(m) or json.dumps(m.tool_calls, default=str) for m in replies],
    }


def _calls(n: int) -> str:
    return f"{n} model call{'' if n == 1 else 's'}"


class SubAgentToolExecutor:
    """Decides a node through an LLM that calls ``run_<node>``; ``Unavailable`` without model or tool.

    ``extractor`` reads an answer the model gave in free text instead of the ``answer`` tool
    (a provider that does not honour ``tool_choice``); a typed answer needs no extraction.
    """

    name = "subagent"

    def __init__(
        self,
        model: BaseChatModel | None,
        registry: Registry,
        log: InvocationLog | None = None,
        extractor: VerdictExtractor | None = None,
        max_turns: int = DEFAULT_MAX_TURNS,
    ):
        self.model = role_chat(model, "codeact")
        self.registry = registry
        self.tool = ToolExecutor(registry, log)
        self.extractor = extractor or VerdictExtractor()
        self.max_turns = max_turns

    async def decide(self, node: Node, ctx: ToolContext) -> Outcome:
        async with model_turn(self.model):  # the local model: one node's turns at a time
            return await self._decide(node, ctx)

    async def _decide(self, node: Node, ctx: ToolContext) -> Outcome:
        if self.model is None:
            raise Unavailable(NO_MODEL)
        try:
            self.registry.resolve(node.tool_name)  # no tokens spent on a node without a tool
        except (ToolMissing, ToolIntegrityError) as exc:
            raise Unavailable(str(exc)) from None
        start = time.perf_counter()
        function = f"run_{node.id}"
        question = ctx.text or node.text
        run = _RunOnce(self.tool, node, ctx)
        guard = LoopGuard()
        force = ForceAnswer(self.max_turns, guard)
        description = texts.function_description(node.id, question)
        agent = self._agent(function, description, run, [guard, force])
        messages: list[BaseMessage] = []
        answer: Any = None
        with agent_span(self.name, node.id, f"calls {function} and reports its verdict") as span:
            # model and tool steps alternate: the last model call is step 2 * turns - 1
            config = {"recursion_limit": 2 * self.max_turns}
            stream = agent.astream(
                {"messages": [HumanMessage(question)]}, config, stream_mode="values"
            )
            try:
                async with aclosing(stream):
                    async for state in stream:
                        messages = state["messages"]
                        answer = state.get("structured_response", answer)
                        if answer is not None or _turns(messages) >= self.max_turns:
                            break  # the budget counts model calls, whatever steps they take
            except GraphRecursionError:
                pass  # the budget ended without an answer: reported below
            finally:
                trace = _trace(messages)
                n_in, n_out = trace["input_tokens"], trace["output_tokens"]
                record_usage(span, n_in, n_out, model=model_label(self.model))
        trace["forced_by"] = force.forced_by
        calls = _calls(trace["turns"])
        if run.outcome is None or run.outcome.verdict is None:
            raise SubAgentFailed(f"the model never called {function} in {calls}", trace)
        tool_verdict = run.outcome.verdict
        trace["tool_verdict"] = tool_verdict.model_dump()
        said = await self._said(answer, messages, question, trace)
        if said is None:
            raise SubAgentFailed(f"no answer after {function} in {calls}", trace)
        trace["agrees_with_tool"] = said.value == tool_verdict.value
        verdict = Verdict(
            value=said.value,
            observed=tool_verdict.observed,
            threshold=tool_verdict.threshold,
            explanation=said.explanation or tool_verdict.explanation,
        )
        return Outcome(
            verdict=verdict,
            executor=self.name,
            tool_version=run.outcome.tool_version,
            ms=(time.perf_counter() - start) * 1000,
            detail=trace,
        )

    def _agent(
        self, function: str, description: str, run: _RunOnce, limits: list[AgentMiddleware]
    ) -> Any:
        """The agent: ``run_<node>`` as its one tool and the typed answer; it must call the tool,
        then answer (``CallFirst``), within ``limits`` (the loop guard, the forced answer)."""
        tool = StructuredTool(
            name=function, description=description, args_schema=_NoArguments, coroutine=run.call
        )
        middleware = [_ChatSpans(model_label(self.model)), CallFirst(function), *limits]
        return create_agent(
            self.model,
            [tool],
            system_prompt=texts.SYSTEM.format(function=function, answer=ANSWER_TOOL),
            response_format=ToolStrategy(Answer),
            middleware=middleware,
        )

    async def _said(
        self, answer: Any, messages: list[BaseMessage], question: str, trace: dict[str, Any]
    ) -> Verdict | None:
        """What the sub-agent answered: its typed answer, else its last text read for a verdict."""
        if isinstance(answer, TypedAnswer):
            trace["answer"] = answer.model_dump()
            return Verdict(value=answer.verdict, explanation=answer.explanation)
        last = messages[-1] if messages else None
        if not isinstance(last, AIMessage) or last.tool_calls or not message_text(last).strip():
            trace["answer"] = None
            return None
        text = message_text(last).strip()
        trace["answer"] = text
        try:
            said, source = await self.extractor.averdict(question, text)
        except ExtractionError as exc:
            raise SubAgentFailed(str(exc), trace) from None
        trace["extract"] = {"source": source}
        return said
