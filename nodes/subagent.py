"""The tool-calling sub-agent: an LLM that decides a node by calling its compiled tool.

The paper's middle configuration: the main agent delegates the node to a sub-agent whose only
function is ``run_<node>`` (the node's compiled tool, no arguments); the sub-agent calls it,
reads the verdict and answers in free text, which is parsed back into a verdict. Its value comes
from that answer (so a mis-report shows, as it would in production); observed value and
threshold come from the tool.
"""

from __future__ import annotations

import json
import time
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, ToolMessage

from sopgraph.graphs.executors import Outcome, ToolContext, Unavailable
from sopgraph.graphs.model import Node, Verdict
from sopgraph.graphs.telemetry import agent_span, chat_span, record_usage
from sopgraph.nodes.codeact import NO_MODEL, message_text, model_label
from sopgraph.nodes.tool_node import ToolExecutor
from sopgraph.prompts import subagent as texts
from sopgraph.prompts.envelope import role_chat
from sopgraph.prompts.verdict import ExtractionError, VerdictExtractor
from sopgraph.tools.invocation_log import InvocationLog
from sopgraph.tools.registry import Registry, ToolIntegrityError, ToolMissing

DEFAULT_MAX_TURNS = 4


class SubAgentFailed(RuntimeError):
    """The sub-agent ended without a usable verdict; ``detail`` keeps its trace and tokens."""

    def __init__(self, reason: str, detail: dict[str, Any]):
        super().__init__(reason)
        self.detail = detail


class SubAgentToolExecutor:
    """Decides a node through an LLM that calls ``run_<node>``; ``Unavailable`` without model or tool."""

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
        if self.model is None:
            raise Unavailable(NO_MODEL)
        try:
            self.registry.resolve(node.tool_name)  # no tokens spent on a node without a tool
        except (ToolMissing, ToolIntegrityError) as exc:
            raise Unavailable(str(exc)) from None
        start = time.perf_counter()
        function = f"run_{node.id}"
        spec = {
            "type": "function",
            "function": {
                "name": function,
                "description": texts.function_description(node.id, ctx.text or node.text),
                "parameters": {"type": "object", "properties": {}},
            },
        }
        bound = self.model.bind_tools([spec])
        messages: list[BaseMessage] = [
            SystemMessage(texts.SYSTEM.format(function=function)),
            HumanMessage(ctx.text or node.text),
        ]
        trace: dict[str, Any] = {"turns": 0, "input_tokens": 0, "output_tokens": 0, "replies": []}
        tool_outcome: Outcome | None = None
        answer: str | None = None
        with agent_span(self.name, node.id, f"calls {function} and reports its verdict") as span:
            while trace["turns"] < self.max_turns and answer is None:
                reply = await self._chat(bound, messages, trace)
                messages.append(reply)
                if reply.tool_calls:
                    for call in reply.tool_calls:
                        if call["name"] == function and tool_outcome is None:
                            tool_outcome = await self.tool.decide(node, ctx)  # raising = fallback
                        content = (
                            json.dumps(tool_outcome.verdict.model_dump(), default=str)
                            if call["name"] == function and tool_outcome
                            else f"unknown function {call['name']}: call {function}"
                        )
                        messages.append(ToolMessage(content, tool_call_id=call.get("id") or ""))
                elif tool_outcome is None:
                    messages.append(HumanMessage(texts.NUDGE_CALL.format(function=function)))
                elif message_text(reply).strip():
                    answer = message_text(reply)
                else:
                    messages.append(HumanMessage(texts.NUDGE_ANSWER))
            record_usage(
                span, trace["input_tokens"], trace["output_tokens"], model=model_label(self.model)
            )
        trace["answer"] = answer
        if tool_outcome is None or tool_outcome.verdict is None:
            raise SubAgentFailed(
                f"the model never called {function} in {trace['turns']} turns", trace
            )
        tool_verdict = tool_outcome.verdict
        trace["tool_verdict"] = tool_verdict.model_dump()
        if answer is None:
            raise SubAgentFailed(f"no answer after {function} in {trace['turns']} turns", trace)
        try:
            said, source = await self.extractor.averdict(ctx.text or node.text, answer)
        except ExtractionError as exc:
            raise SubAgentFailed(str(exc), trace) from None
        trace["extract"] = {"source": source}
        trace["agrees_with_tool"] = said.value == tool_verdict.value
        verdict = Verdict(
            value=said.value,
            observed=tool_verdict.observed,
            threshold=tool_verdict.threshold,
            explanation=said.explanation or tool_verdict.explanation,
        )
        ms = (time.perf_counter() - start) * 1000
        return Outcome(
            verdict=verdict,
            executor=self.name,
            tool_version=tool_outcome.tool_version,
            ms=ms,
            detail=trace,
        )

    async def _chat(self, bound: Any, messages: list[BaseMessage], trace: dict[str, Any]) -> Any:
        label = model_label(self.model)
        with chat_span(label) as span:
            reply = await bound.ainvoke(messages)
            usage = getattr(reply, "usage_metadata", None) or {}
            n_in, n_out = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
            record_usage(span, n_in, n_out, model=label)
        trace["turns"] += 1
        trace["input_tokens"] += n_in
        trace["output_tokens"] += n_out
        trace["replies"].append(message_text(reply) or json.dumps(reply.tool_calls, default=str))
        return reply
