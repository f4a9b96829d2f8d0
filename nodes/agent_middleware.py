"""Middleware that makes a tool-calling agent end: with a typed answer, at most once per call.

For LangChain's ``create_agent`` with ``response_format=ToolStrategy(schema)`` (the answer is
an ``answer`` tool from the first turn):

- ``CallFirst``: the agent's one tool is offered alone, forced, until it has answered; then
  only the answer (the sub-agent of ``nodes/subagent.py``);
- ``LoopGuard``: a repeated identical call is not run again; the agent gets the earlier
  result with a note to answer;
- ``ForceAnswer``: on the budget's last model call, or after a repeated call, only the answer
  is offered.

On the local model a ``tool_choice`` becomes a grammar (``nodes/models/_tool_format``): "any"
leaves out the free-text reply and one naming a tool leaves only that tool, so an answer that
is forced is an answer in the schema.

Example:
    >>> guard = LoopGuard()
    >>> middleware = [guard, ForceAnswer(turns=10, guard=guard)]
    >>> # create_agent(model, tools, response_format=ToolStrategy(schema), middleware=middleware)
"""

from __future__ import annotations

import json
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

ANSWER_TOOL = "answer"
REPEAT_NOTE = (
    "\n\n(You already called {name} with these arguments; the result above is the earlier one, "
    "not run again. Do not repeat the call: call another tool the procedure needs, or call "
    f"{ANSWER_TOOL} now.)"
)
FORCE_NOTE = (
    "The turn budget is nearly spent: call {answer} now with the decision the procedure gives "
    "for the results above."
)
REPEAT_FORCE_NOTE = (
    "You asked again for a result you already have, so you have every result you asked for:\n"
    "{results}\nCall {answer} now with the decision the procedure gives for these results."
)
RESULT_CHARS = 300  # one earlier result, as the forced answer's note repeats it


def content_text(content: Any) -> str:
    """MCP content blocks as one text (the model reads plain text, as the paper's agents do)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return str(content)


class LoopGuard(AgentMiddleware):
    """A repeated identical tool call is not run again: the earlier result, with a note to answer."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[str, str] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.repeats = 0

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        call = request.tool_call
        key = json.dumps([call["name"], call.get("args") or {}], sort_keys=True, default=str)
        if key in self.seen:
            self.repeats += 1
            note = REPEAT_NOTE.format(name=call["name"])
            return ToolMessage(self.seen[key] + note, tool_call_id=call["id"], name=call["name"])
        result = await handler(request)
        if isinstance(result, ToolMessage):
            self.seen[key] = content_text(result.content)
            self.calls.append((call["name"], call.get("args") or {}))
        return result

    def digest(self) -> str:
        """Each distinct call made so far and its result, one line each, for the forced answer."""
        lines = []
        for name, args in self.calls:
            key = json.dumps([name, args], sort_keys=True, default=str)
            result = " ".join(self.seen.get(key, "").split())
            if len(result) > RESULT_CHARS:
                result = result[: RESULT_CHARS - 1] + "…"
            lines.append(f"- {name}({json.dumps(args, default=str)}): {result}")
        return "\n".join(lines) or "(no results)"


class ForceAnswer(AgentMiddleware):
    """Only the ``answer`` action is offered (tool_choice) once the agent should stop calling:

    - on the budget's last model call;
    - on the call after the loop guard answered a repeated call from memory: the model asked
      again for what it has, so it is shown every result it got and must decide.

    With ``response_format=ToolStrategy`` the agent binds its tools with ``tool_choice: any``;
    with no other tool left that is the answer, which the local server's JSON-schema grammar
    then enforces (``nodes/models/_tool_format``).
    """

    def __init__(self, turns: int, guard: LoopGuard | None = None) -> None:
        super().__init__()
        self.turns = turns
        self.guard = guard
        self.forced_by: str | None = None

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        done = sum(isinstance(m, AIMessage) for m in request.messages)
        note = None
        if done >= self.turns - 1:
            note = FORCE_NOTE.format(answer=ANSWER_TOOL)
            self.forced_by = self.forced_by or "budget"
        elif self.guard is not None and self.guard.repeats:
            note = REPEAT_FORCE_NOTE.format(answer=ANSWER_TOOL, results=self.guard.digest())
            self.forced_by = self.forced_by or "repeat"
        if note is not None:
            request = request.override(tools=[], messages=[*request.messages, HumanMessage(note)])
        return await handler(request)


class CallFirst(AgentMiddleware):
    """The agent must call ``tool`` before it may answer, and answers as soon as it has.

    Until a result of ``tool`` is in the conversation, the model is offered that tool alone,
    named in ``tool_choice`` (no answer action: the response format is left out of the call).
    Once it is there, with ``then_answer``, only the answer is offered: an agent with one
    tool has nothing else to call, so the call after the result is the typed answer.
    """

    def __init__(self, tool: str, then_answer: bool = True) -> None:
        super().__init__()
        self.tool = tool
        self.then_answer = then_answer

    def answered(self, messages: list[Any]) -> bool:
        return any(isinstance(m, ToolMessage) and m.name == self.tool for m in messages)

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        if not self.answered(request.messages):
            only = [t for t in request.tools if getattr(t, "name", None) == self.tool]
            request = request.override(tools=only, response_format=None, tool_choice=self.tool)
        elif self.then_answer:
            request = request.override(tools=[])
        return await handler(request)
