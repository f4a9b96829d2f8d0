"""The paper's two baselines over MCP: a function-calling agent and a ReAct agent.

Both get the SOP in the system prompt, every tool the server offers (the domain's, plus
distractors in a bloat run) through langchain-mcp-adapters, a turn budget (the paper's 10 and
15 model calls), and only the task's input columns. The final text is parsed into the output
columns; a run that ends without them, or past its budget, is not completed. The typed
answer they offer is built in ``answer_schema.py``.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from contextlib import AsyncExitStack
from typing import Any

import openai
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from pydantic import BaseModel

from sopgraph.evals.sopbench.agent_result import AgentResult, token_usage
from sopgraph.evals.sopbench.answer import parse_answer
from sopgraph.evals.sopbench.answer_schema import allowed_values, answer_schema
from sopgraph.evals.sopbench.domain import Domain, Task
from sopgraph.evals.sopbench.server import server_config
from sopgraph.nodes.agent_middleware import ANSWER_TOOL, ForceAnswer, LoopGuard, content_text

FC_TURNS = 10  # the paper's FC agent: at most 10 iterations
REACT_TURNS = 15  # the paper's ReAct agent: at most 15

SYSTEM = """You are an operations agent. Follow this Standard Operating Procedure exactly,
using the tools to get the data it needs.

<sop>
{sop}
</sop>

When you are done, call the `answer` tool with the final answer, one argument per field
(the fields of the XML tags {tags} the SOP may ask for)."""

REACT_NOTE = """
Work in the ReAct style: before each tool call write one short Thought saying what you
need and why; read each Observation; call at least one tool before you answer."""


def system_prompt(domain: Domain, react: bool = False) -> str:
    tags = " ".join(f"<{c}>...</{c}>" for c in domain.output_columns)
    text = SYSTEM.format(sop=domain.sop_text.strip(), tags=tags)
    return text + REACT_NOTE if react else text


def task_prompt(task: Task) -> str:
    return "Task input:\n" + json.dumps(task.inputs, indent=2)


def _steps(messages: list[BaseMessage], chars: int | None = 500) -> list[dict[str, Any]]:
    """The tool calls and results of a conversation, for the per-task record. A call's result
    is the first unclaimed one with its id: a local model's ids repeat when a call does. Each
    result is cut to ``chars`` (None: whole)."""
    results: dict[str, list[str]] = {}
    for m in messages:
        if isinstance(m, ToolMessage):
            results.setdefault(m.tool_call_id, []).append(str(m.content)[:chars])
    steps = []
    for m in messages:
        for c in m.tool_calls if isinstance(m, AIMessage) else []:
            found = results.get(c["id"]) or [None]
            step = {"tool": c["name"], "args": c["args"], "result": found.pop(0)}
            if isinstance(m.content, str) and m.content.strip():
                step["thought"] = m.content.strip()  # ReAct's Thought before the call
            steps.append(step)
    return steps


def plain_text_tool(tool: BaseTool) -> BaseTool:
    """The MCP tool, returning plain text; a tool error goes back to the model as its text,
    in a message marked as an error (``status="error"``: the decide step leaves it out)."""

    async def call(**kwargs: Any) -> str:
        out = await tool.ainvoke(
            {"name": tool.name, "args": kwargs, "id": "mcp", "type": "tool_call"}
        )
        text = content_text(out.content)
        if out.status == "error":
            raise ToolException(text)
        return text

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


def _local_tool_format() -> str | None:
    """The tool-call format of the configured model when it is the local one, else None."""
    from sopgraph.nodes.models import Settings, SettingsError, tool_format

    try:
        settings = Settings()
    except SettingsError:  # no model configured: not the local one (the model call says so)
        return None
    return tool_format(settings) if settings.provider == "local" else None


def thoughts_in_calls(model: Any) -> Any:
    """``model`` asking the local front for a ``thought`` before each call (ReAct's Thought).

    Under the ``json-schema`` tool format a reply is a grammar-bound call with no room for
    text, so the Thought ReAct writes before each Action is a field of the call
    (``nodes/models/_tool_format``: ``thought_first``); it comes back as the message's text.
    Only for a model behind the local front: another model writes its thoughts as text.
    """
    from sopgraph.nodes.models import THOUGHT_KEY

    if not hasattr(model, "extra_body") or _local_tool_format() != "json-schema":
        return model  # a scripted model, a hosted one, or another local format
    return model.model_copy(update={"extra_body": {**(model.extra_body or {}), THOUGHT_KEY: True}})


def results_as_user_turns() -> bool:
    """Whether the configured model's chat format drops tool turns (``tool_results_as_text``):
    the local model under llama-cpp-python's ``chatml-function-calling``."""
    return _local_tool_format() == "chatml-function-calling"


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
    result_chars: int | None = 500  # of each tool result kept in a task's steps
    _structured: dict[str, Any] | None = None  # the last typed answer, reasoning included
    decide = "none"  # "code", "quote": the SOP's rule applied by code after the answer (decide.py)

    def __init__(
        self,
        domain: Domain,
        model: Any,
        distractors: list[str] | None = None,
        *,
        tool_results_in_user_turns: bool = False,
        decide: str = "none",
        votes: int = 1,
    ):
        self.domain = domain
        self.columns = domain.output_columns
        self.chat = model  # the plain model: the decide-by-code step offers it no tools
        self.model = offering_tools(model)
        self.decide = decide
        self.votes = votes  # replies the decide-by-code step votes over (1: the greedy one)
        self.as_text = tool_results_in_user_turns  # see ``tool_results_as_text``
        self.config = server_config(domain.path, distractors)
        self.tools: list[Any] = []
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> McpToolsAgent:
        from langchain_mcp_adapters.tools import load_mcp_tools

        # the whole environment, as the run's McpPool passes it (the SDK's default passes only
        # HOME, PATH and a few others: ENTERPRISE_TODAY, which dates a replayed change, was lost)
        params = StdioServerParameters(command=self.config.command, args=self.config.args,
                                       env={**os.environ, **self.config.env})  # fmt: skip
        # the simulator's prints go to a scratch file, not into the run's progress lines
        errlog = self._stack.enter_context(tempfile.TemporaryFile("w+"))
        read, write = await self._stack.enter_async_context(stdio_client(params, errlog=errlog))
        session = await self._stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        self.tools = [plain_text_tool(t) for t in await load_mcp_tools(session)]
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    def _result(
        self,
        messages: list[BaseMessage],
        start: float,
        error: str | None,
        answer: dict[str, str] | None = None,
    ) -> AgentResult:
        final = next(
            (str(m.content) for m in reversed(messages) if isinstance(m, AIMessage) and m.content),
            "",
        )
        if answer is not None:  # typed: the answer itself (a ReAct Thought may be the last text)
            final = json.dumps(self._structured or answer)
        elif error is None:
            answer = parse_answer(final, self.columns)
        if error is None and answer is None:
            error = f"final answer lacks {self.columns}"
        return AgentResult(
            answer=answer,
            final_text=final,
            error=error,
            tokens=token_usage(messages),
            seconds=time.perf_counter() - start,
            turns=sum(isinstance(m, AIMessage) for m in messages),
            steps=_steps(messages, self.result_chars),
        )


class _ToolResultsAsText(AgentMiddleware):
    """``tool_results_as_text`` on every model call of the prebuilt agent."""

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return await handler(request.override(messages=tool_results_as_text(request.messages)))


class _BaselineAgent(McpToolsAgent):
    """LangChain's ``create_agent`` over the domain's tools, a typed answer and a turn budget.

    The answer is a ``ToolStrategy`` response format (an ``answer`` tool from the first turn,
    the output columns as its schema); ``LoopGuard`` answers repeated calls from memory;
    ``ForceAnswer`` leaves only the answer on the last budgeted call. A model that still
    answers in text is parsed for the output tags, as the paper's agents are.
    """

    react = False

    def system(self) -> str:
        return system_prompt(self.domain, react=self.react)

    def schema(self) -> type[BaseModel]:
        return answer_schema(self.domain)

    def prompt(self, task: Any) -> str:
        return task_prompt(task)

    async def solve(self, task: Any) -> AgentResult:
        from langchain.agents import create_agent
        from langchain.agents.structured_output import ToolStrategy
        from langgraph.errors import GraphRecursionError

        start = time.perf_counter()
        self._structured: dict[str, Any] | None = None
        guard = LoopGuard()
        force = ForceAnswer(self.turns, guard)
        middleware: list[AgentMiddleware] = [guard, force]

        def ended(*args: Any) -> AgentResult:
            result = self._result(*args)
            result.forced_by = force.forced_by
            return result

        if self.as_text:
            middleware.append(_ToolResultsAsText())
        agent = create_agent(
            self.model,
            self.tools,
            system_prompt=self.system(),
            response_format=ToolStrategy(self.schema()),
            middleware=middleware,
        )
        inp = {"messages": [HumanMessage(self.prompt(task))]}
        messages: list[BaseMessage] = []
        structured: Any = None
        try:
            # model and tool steps alternate: the last model call is step 2 * turns - 1
            config = {"recursion_limit": 2 * self.turns}
            async for state in agent.astream(inp, config, stream_mode="values"):
                messages = state["messages"]
                structured = state.get("structured_response", structured)
        except GraphRecursionError:
            return ended(messages, start, f"turn budget of {self.turns} model calls ended")
        except openai.APITimeoutError as exc:  # too slow for the request timeout: not completed
            return ended(messages, start, f"{type(exc).__name__}: {exc}")
        except (openai.APIConnectionError, openai.InternalServerError) as exc:
            if _unreachable(exc):
                raise  # no model to ask: stop the run (it resumes) rather than record a failure
            return ended(messages, start, f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # noqa: BLE001 - an execution error is the metric (ECR), kept
            return ended(messages, start, f"{type(exc).__name__}: {exc}")
        turns = sum(isinstance(m, AIMessage) for m in messages)
        if structured is None and turns >= self.turns and _calls_pending(messages):
            return ended(messages, start, f"turn budget of {self.turns} model calls ended")
        if self.react and not any(
            isinstance(m, ToolMessage) and m.name != ANSWER_TOOL for m in messages
        ):
            return ended(messages, start, "answered without calling a tool")
        answer = None
        if structured is not None:
            data = structured.model_dump() if isinstance(structured, BaseModel) else structured
            self._structured = data
            answer = {c: str(data.get(c, "")) for c in self.columns}
        result = ended(messages, start, None, answer)
        if self.decide in ("code", "quote", "verify") and result.error is None:
            await self._decide_by_code(task, messages, result, start)
        return result

    async def _decide_by_code(
        self, task: Any, messages: list[BaseMessage], result: AgentResult, start: float
    ) -> None:
        """The SOP's rule applied by code over the gathered data (``decide.py``): its answer
        replaces the agent's when usable; the step is kept in the result either way."""
        from sopgraph.evals.sopbench.decide import Decision, decide_by_code, decide_verified

        allowed = {c: allowed_values(self.domain.sop_text, c) for c in self.columns}
        args = (self.chat, self.domain.sop_text, task.inputs, messages, allowed, result.answer)
        try:
            if self.decide == "verify":
                decision = await decide_verified(*args)
            else:
                decision = await decide_by_code(
                    *args, votes=self.votes, quote=self.decide == "quote"
                )
        except Exception as exc:  # noqa: BLE001 - the agent's answer stands; the reason is kept
            if _unreachable(exc):
                raise  # no model to ask: stop the run (it resumes)
            decision = Decision(by="agent", agent_answer=result.answer, errors=[f"{exc!r}"])
        if decision.answer is not None:
            result.answer = decision.answer
        for k, v in decision.tokens.items():
            result.tokens[k] = result.tokens.get(k, 0) + v
        result.turns += decision.attempts + sum(v["seed"] is not None for v in decision.votes)
        result.decided = decision.model_dump()
        result.seconds = time.perf_counter() - start


def _calls_pending(messages: list[BaseMessage]) -> bool:
    """The last model reply asked for tools (the agent stopped for its budget, not an answer)."""
    last = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
    return bool(last and last.tool_calls)


class FunctionCallingAgent(_BaselineAgent):
    """The FC agent: native tool calls until the model answers, at most 10 model calls."""

    name = "fc"
    turns = FC_TURNS


class ReActAgent(_BaselineAgent):
    """The ReAct agent: a Thought before each action, at most 15 model calls."""

    name = "react"
    turns = REACT_TURNS
    react = True

    def __init__(self, domain: Domain, model: Any, *args: Any, **kwargs: Any):
        super().__init__(domain, thoughts_in_calls(model), *args, **kwargs)
        self.chat = model  # the decide step asks for code, not for a call with a thought
