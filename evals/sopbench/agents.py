"""The paper's two baselines over MCP: a function-calling agent and a ReAct agent.

Both get the SOP in the system prompt, every tool the server offers (the domain's, plus
distractors in a bloat run) through langchain-mcp-adapters, a turn budget (the paper's 10 and
15 model calls), and only the task's input columns. The final text is parsed into the output
columns; a run that ends without them, or past its budget, is not completed.
"""

from __future__ import annotations

import json
import tempfile
import time
from contextlib import AsyncExitStack
from typing import Any

import openai
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from sopgraph.evals.sopbench.agent_result import AgentResult
from sopgraph.evals.sopbench.answer import parse_answer
from sopgraph.evals.sopbench.domain import Domain, Task
from sopgraph.evals.sopbench.server import server_config

FC_TURNS = 10  # the paper's FC agent: at most 10 iterations
REACT_TURNS = 15  # the paper's ReAct agent: at most 15

SYSTEM = """You are an operations agent. Follow this Standard Operating Procedure exactly,
using the tools to get the data it needs.

<sop>
{sop}
</sop>

When you are done, give the final answer as XML tags, one per field: {tags}"""

REACT_NOTE = """
Work in the ReAct style: before each tool call write one short Thought saying what you
need and why; read each Observation; call at least one tool before you answer."""


def system_prompt(domain: Domain, react: bool = False) -> str:
    tags = " ".join(f"<{c}>...</{c}>" for c in domain.output_columns)
    text = SYSTEM.format(sop=domain.sop_text.strip(), tags=tags)
    return text + REACT_NOTE if react else text


def task_prompt(task: Task) -> str:
    return "Task input:\n" + json.dumps(task.inputs, indent=2)


def _usage(messages: list[BaseMessage]) -> dict[str, int]:
    n_in = n_out = 0
    for m in messages:
        usage = getattr(m, "usage_metadata", None) or {}
        n_in += int(usage.get("input_tokens") or 0)
        n_out += int(usage.get("output_tokens") or 0)
    return {"input_tokens": n_in, "output_tokens": n_out, "total_tokens": n_in + n_out}


def _steps(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    """The tool calls and results of a conversation, for the per-task record."""
    results = {m.tool_call_id: str(m.content)[:500] for m in messages if isinstance(m, ToolMessage)}
    return [
        {"tool": c["name"], "args": c["args"], "result": results.get(c["id"])}
        for m in messages
        if isinstance(m, AIMessage)
        for c in m.tool_calls
    ]


def content_text(content: Any) -> str:
    """MCP content blocks as one text (the model reads plain text, as the paper's agents do)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return str(content)


def plain_text_tool(tool: BaseTool) -> BaseTool:
    """The MCP tool, returning plain text; a tool error goes back to the model as its text."""

    async def call(**kwargs: Any) -> str:
        return content_text(await tool.ainvoke(kwargs))

    return StructuredTool(
        name=tool.name,
        description=tool.description,
        args_schema=tool.args_schema,
        coroutine=call,
        handle_tool_error=True,
    )


def offering_tools(model: Any) -> Any:
    """``model`` sending ``tool_choice: auto`` with its tools.

    OpenAI's API treats an absent ``tool_choice`` as "auto", but llama-cpp-python's
    function-calling chat format then hides the tools from the model; LangChain only sends
    ``tool_choice`` when asked, so both agents ask through ``model_kwargs``.
    """
    kwargs = getattr(model, "model_kwargs", None)
    if not isinstance(kwargs, dict) or "tool_choice" in kwargs:
        return model
    return model.model_copy(update={"model_kwargs": {**kwargs, "tool_choice": "auto"}})


def _unreachable(exc: Exception) -> bool:
    """No model answers: a refused connection, or a front's 502/503 for a dead upstream."""
    if isinstance(exc, openai.APIConnectionError):
        return True
    return getattr(exc, "status_code", None) in (502, 503)


def tool_results_as_text(messages: list[BaseMessage]) -> list[BaseMessage]:
    """Tool results as user turns, for a chat format that drops the ``tool`` role.

    llama-cpp-python's ``chatml-function-calling`` renders system, user and assistant turns
    only: the model would never see what its tools returned, and calls them again and again.
    """
    return [
        HumanMessage(f"Result of {m.name or 'the tool call'}: {content_text(m.content)}")
        if isinstance(m, ToolMessage)
        else m
        for m in messages
    ]


class McpToolsAgent:
    """Opens the domain's tool server once and offers its tools to a chat model."""

    name = "agent"
    turns = FC_TURNS

    def __init__(
        self,
        domain: Domain,
        model: Any,
        distractors: list[str] | None = None,
        *,
        tool_results_in_user_turns: bool = False,
    ):
        self.domain = domain
        self.model = offering_tools(model)
        self.as_text = tool_results_in_user_turns  # see ``tool_results_as_text``
        self.config = server_config(domain.path, distractors)
        self.tools: list[Any] = []
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> McpToolsAgent:
        from langchain_mcp_adapters.tools import load_mcp_tools

        params = StdioServerParameters(command=self.config.command, args=self.config.args)
        # the simulator's prints go to a scratch file, not into the run's progress lines
        errlog = self._stack.enter_context(tempfile.TemporaryFile("w+"))
        read, write = await self._stack.enter_async_context(stdio_client(params, errlog=errlog))
        session = await self._stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        self.tools = [plain_text_tool(t) for t in await load_mcp_tools(session)]
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    def _result(self, messages: list[BaseMessage], start: float, error: str | None) -> AgentResult:
        final = next(
            (str(m.content) for m in reversed(messages) if isinstance(m, AIMessage) and m.content),
            "",
        )
        answer = parse_answer(final, self.domain.output_columns) if error is None else None
        if error is None and answer is None:
            error = f"final answer lacks {self.domain.output_columns}"
        return AgentResult(
            answer=answer,
            final_text=final,
            error=error,
            tokens=_usage(messages),
            seconds=time.perf_counter() - start,
            turns=sum(isinstance(m, AIMessage) for m in messages),
            steps=_steps(messages),
        )


class FunctionCallingAgent(McpToolsAgent):
    """The FC agent: native tool calls in a loop until the model answers or the budget ends."""

    name = "fc"
    turns = FC_TURNS

    async def solve(self, task: Task) -> AgentResult:
        start = time.perf_counter()
        by_name = {t.name: t for t in self.tools}
        model = self.model.bind_tools(self.tools)
        messages: list[BaseMessage] = [
            SystemMessage(system_prompt(self.domain)),
            HumanMessage(task_prompt(task)),
        ]
        try:
            for _ in range(self.turns):
                view = tool_results_as_text(messages) if self.as_text else messages
                reply = await model.ainvoke(view)
                messages.append(reply)
                if not reply.tool_calls:
                    return self._result(messages, start, None)
                for call in reply.tool_calls:
                    tool = by_name.get(call["name"])
                    if tool is None:
                        content = f"error: no tool named {call['name']!r}"
                        messages.append(ToolMessage(content, tool_call_id=call["id"]))
                        continue
                    messages.append(await tool.ainvoke({**call, "type": "tool_call"}))
        except openai.APITimeoutError as exc:  # too slow for the request timeout: not completed
            return self._result(messages, start, f"{type(exc).__name__}: {exc}")
        except (openai.APIConnectionError, openai.InternalServerError) as exc:
            if _unreachable(exc):
                raise  # no model to ask: stop the run (it resumes) rather than record a failure
            return self._result(messages, start, f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # noqa: BLE001 - an execution error is the metric (ECR), kept
            return self._result(messages, start, f"{type(exc).__name__}: {exc}")
        return self._result(messages, start, f"turn budget of {self.turns} model calls ended")


class _ToolResultsAsText(AgentMiddleware):
    """``tool_results_as_text`` on every model call of the prebuilt agent."""

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return await handler(request.override(messages=tool_results_as_text(request.messages)))


class ReActAgent(McpToolsAgent):
    """The ReAct agent: LangChain's prebuilt agent graph, Thought before each action, 15 turns."""

    name = "react"
    turns = REACT_TURNS

    async def solve(self, task: Task) -> AgentResult:
        from langchain.agents import create_agent
        from langgraph.errors import GraphRecursionError

        start = time.perf_counter()
        agent = create_agent(
            self.model,
            self.tools,
            system_prompt=system_prompt(self.domain, react=True),
            middleware=[_ToolResultsAsText()] if self.as_text else [],
        )
        inp = {"messages": [HumanMessage(task_prompt(task))]}
        messages: list[BaseMessage] = []
        try:
            # model and tool steps alternate: the last model call is step 2 * turns - 1
            config = {"recursion_limit": 2 * self.turns - 1}
            async for state in agent.astream(inp, config, stream_mode="values"):
                messages = state["messages"]
        except GraphRecursionError:
            return self._result(messages, start, f"turn budget of {self.turns} model calls ended")
        except openai.APITimeoutError as exc:
            return self._result(messages, start, f"{type(exc).__name__}: {exc}")
        except (openai.APIConnectionError, openai.InternalServerError) as exc:
            if _unreachable(exc):
                raise
            return self._result(messages, start, f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # noqa: BLE001 - an execution error is the metric (ECR), kept
            return self._result(messages, start, f"{type(exc).__name__}: {exc}")
        if not any(isinstance(m, ToolMessage) for m in messages):
            return self._result(messages, start, "answered without calling a tool")
        return self._result(messages, start, None)
