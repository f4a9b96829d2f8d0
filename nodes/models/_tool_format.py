"""How the local model is asked for tool calls, and how its replies become OpenAI ``tool_calls``.

Three formats, compared live by ``sopgraph model toolcall-formats``
(``evals/model_results/toolcall_formats.json``):

- ``chatml-function-calling``: llama-cpp-python's own chat format. It shows the tools only
  when a request sends ``tool_choice``, never renders ``tool`` turns and HTML-escapes turns.
- ``hermes``: the GGUF's own Qwen2.5 chat template (the server runs without ``--chat_format``):
  tools in the system prompt, the model answers ``<tool_call>{"name": …, "arguments": …}
  </tool_call>``, which llama-cpp-python does not parse; ``parse_hermes`` does, as vLLM's
  hermes parser does. Earlier calls go back in the same form and tool results as ``tool``
  turns (the template renders them as ``<tool_response>``).
- ``json-schema``: the tools described in the system prompt and the reply constrained by a
  JSON schema (llama.cpp's grammar) to ``{"tool", "arguments"}`` or ``{"answer"}``; a
  ``tool_choice`` of ``required`` leaves out the text answer and one naming a tool leaves only
  that tool (how an agent forces its typed answer). A request that sends
  ``"thought_first": true`` (the ReAct agent) gets a ``thought`` string before ``tool`` in
  every call: the Thought a ReAct step writes before its Action, which the grammar would
  otherwise leave no room for. The thought comes back as
  the message's text, and goes back to the model with its call in later turns.

The front (``model_proxy``) applies a ``ToolCallAdapter`` to requests that offer tools and to
their replies; requests without tools (DSPy, CodeAct) pass unchanged. Cassettes keep the
client's request and the server's raw reply, so a replay parses what the model wrote.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from sopgraph.nodes.models._grammar_safe import grammar_safe

ToolFormat = Literal["chatml-function-calling", "hermes", "json-schema"]
TOOL_FORMATS: tuple[ToolFormat, ...] = get_args(ToolFormat)
DEFAULT_TOOL_FORMAT: ToolFormat = "json-schema"
"""The measured best on Qwen2.5-Coder-1.5B (``evals/model_results/toolcall_formats.json``)."""

_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.S)
_FENCE = re.compile(r"```(?:json)?\s*```")


def server_chat_format(fmt: ToolFormat) -> str | None:
    """llama-cpp-python's ``--chat_format`` for a format; None: the GGUF's own template."""
    return "chatml-function-calling" if fmt == "chatml-function-calling" else None


@dataclass
class ParsedReply:
    """A reply split into its text and its tool calls; ``errors`` names blocks left as text."""

    content: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _call(name: Any, arguments: Any) -> dict[str, Any] | str:
    """``{"name", "arguments"}`` with arguments as a dict, or why it is not a call."""
    if not isinstance(name, str) or not name.strip():
        return "no function name"
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return f"arguments of {name} are not JSON"
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return f"arguments of {name} are not an object"
    return {"name": name.strip(), "arguments": arguments}


def parse_hermes(text: str, offered: set[str] | None = None) -> ParsedReply:
    """The ``<tool_call>`` blocks of a Qwen/Hermes reply as calls; the rest stays text.

    A block that is not a JSON object with a ``name`` (malformed JSON, a reply cut off by its
    token budget) is not a call: it stays in the text and ``errors`` says why. A reply that is
    nothing but such an object, without the tags, counts as a call when ``offered`` names it
    (small models drop the tags; see ``_bare_calls``).

    Example:
        >>> parse_hermes('<tool_call>\\n{"name": "f", "arguments": {"x": 1}}\\n</tool_call>').calls
        [{'name': 'f', 'arguments': {'x': 1}}]
    """
    calls: list[dict[str, Any]] = []
    errors: list[str] = []
    kept: list[str] = []
    last = 0
    for match in _BLOCK.finditer(text):
        try:
            obj = json.loads(match.group(1))
        except ValueError:
            errors.append(f"<tool_call> block {len(calls) + len(errors) + 1} is not JSON")
            continue
        call = (
            _call(obj.get("name"), obj.get("arguments"))
            if isinstance(obj, dict)
            else "not an object"
        )
        if isinstance(call, str):
            errors.append(f"<tool_call> block {len(calls) + len(errors) + 1}: {call}")
            continue
        calls.append(call)
        kept.append(text[last : match.start()])
        last = match.end()
    kept.append(text[last:])
    content = "".join(kept).strip()
    if not calls and not errors and offered:
        bare = _bare_calls(content, offered)
        if bare:
            return ParsedReply(bare[1], bare[0])
    return ParsedReply(content, calls, errors)


def _bare_calls(text: str, offered: set[str]) -> tuple[list[dict[str, Any]], str] | None:
    """Untagged JSON objects naming offered functions, and the text around them.

    The GGUF's template shows the call form as ``{{"name": …, "arguments": …}}`` (its braces
    doubled by a quoting slip), and the model often copies that form without the tags; an
    object cut off by the token budget is skipped.
    """
    decoder = json.JSONDecoder()
    calls: list[dict[str, Any]] = []
    kept: list[str] = []
    i = last = 0
    while (i := text.find("{", i)) >= 0:
        start = i + 1 if text.startswith("{{", i) else i
        try:
            obj, end = decoder.raw_decode(text, start)
        except ValueError:
            i += 1
            continue
        call = None
        if isinstance(obj, dict) and obj.get("name") in offered:
            call = _call(obj["name"], obj.get("arguments", obj.get("parameters")))
        if not isinstance(call, dict):
            i = end
            continue
        if start > i and text.startswith("}", end):
            end += 1  # the doubled closing brace
        calls.append(call)
        kept.append(text[last:i])
        i = last = end
    if not calls:
        return None
    kept.append(text[last:])
    rest = _FENCE.sub("", "".join(kept)).strip()
    if not rest.strip("`{} \n"):
        rest = ""  # only the stray braces or fences around the calls
    return calls, rest


def parse_json_reply(text: str) -> ParsedReply:
    """A reply of the ``json-schema`` format: ``{"tool", "arguments"}`` (after a ``thought``
    when the request asked for one: it becomes the reply's text) or ``{"answer"}``."""
    try:
        obj = json.loads(text)
    except ValueError:
        return ParsedReply(text, errors=["the reply is not JSON (cut off by its token budget?)"])
    if isinstance(obj, dict) and "tool" in obj:
        call = _call(obj["tool"], obj.get("arguments"))
        if isinstance(call, dict):
            thought = obj.get("thought")
            return ParsedReply(thought.strip() if isinstance(thought, str) else "", [call])
        return ParsedReply(text, errors=[call])
    if isinstance(obj, dict) and isinstance(obj.get("answer"), str):
        return ParsedReply(obj["answer"])
    return ParsedReply(text, errors=["the reply is neither a tool call nor an answer"])


def openai_tool_calls(calls: list[dict[str, Any]], salt: str) -> list[dict[str, Any]]:
    """Calls in the OpenAI response shape, with ids derived from the reply (stable in replay)."""
    digest = hashlib.sha256(salt.encode()).hexdigest()[:12]
    return [
        {
            "id": f"call_{digest}_{i}",
            "type": "function",
            "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
        }
        for i, c in enumerate(calls)
    ]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else str(content)


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw.strip() else {}
        except ValueError:
            return raw
    return raw


def _offered(request: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools") or () if "function" in t}


class ToolCallAdapter:
    """Rewrites tool-offering requests for one format and turns replies into ``tool_calls``."""

    def __init__(self, fmt: ToolFormat):
        self.format = fmt

    def applies(self, path: str, request: Any) -> bool:
        return (
            self.format != "chatml-function-calling"
            and path.rstrip("/").endswith("/chat/completions")
            and isinstance(request, dict)
            and bool(request.get("tools"))
        )

    def request(self, body: dict[str, Any]) -> dict[str, Any]:
        """The body the server gets."""
        body = copy.deepcopy(body)
        thought = body.pop(THOUGHT_KEY, None)
        if self.format == "hermes":
            body["messages"] = [_hermes_message(m) for m in body.get("messages", [])]
            return body
        return _json_schema_request(body, thoughts=bool(thought))

    def response(self, request: dict[str, Any], reply: Any) -> Any:
        """The reply the client gets: ``<tool_call>`` blocks or JSON calls as ``tool_calls``."""
        if not isinstance(reply, dict) or not isinstance(reply.get("choices"), list):
            return reply
        reply = copy.deepcopy(reply)
        offered = _offered(request)
        for choice in reply["choices"]:
            message = choice.get("message") or {}
            if message.get("tool_calls"):
                continue
            text = _text(message.get("content"))
            parsed = (
                parse_hermes(text, offered) if self.format == "hermes" else parse_json_reply(text)
            )
            message["content"] = parsed.content
            if parsed.calls:
                message["tool_calls"] = openai_tool_calls(parsed.calls, text)
                choice["finish_reason"] = "tool_calls"
        return reply


def _hermes_message(message: dict[str, Any]) -> dict[str, Any]:
    """An assistant turn's calls as the template itself writes them, arguments as an object.

    The server's request model needs ``arguments`` as a string, which the template would
    JSON-encode a second time; written out here the model sees its own format.
    """
    if message.get("role") == "tool":
        return {**message, "content": _text(message.get("content"))}
    calls = message.get("tool_calls")
    if message.get("role") != "assistant" or not calls:
        return message
    blocks = [
        "<tool_call>\n"
        + json.dumps(
            {
                "name": c["function"]["name"],
                "arguments": _arguments(c["function"].get("arguments")),
            },
            ensure_ascii=False,
        )
        + "\n</tool_call>"
        for c in calls
    ]
    text = _text(message.get("content")).strip()
    rest = {k: v for k, v in message.items() if k not in ("tool_calls", "content")}
    return {**rest, "content": "\n".join([text, *blocks] if text else blocks)}


JSON_TOOLS = """

# Tools

You can call these tools (name: description; arguments as a JSON schema):
{tools}

Reply with one JSON object only: {call} to call a tool{rest}"""
JSON_CALL = '{"tool": "<tool name>", "arguments": {...}}'
JSON_THOUGHT_CALL = (
    '{"thought": "<one short sentence: what you need next and why>", '
    '"tool": "<tool name>", "arguments": {...}}'
)
THOUGHT_KEY = "thought_first"
"""A request's extension asking for a ``thought`` before each call (see the module's text)."""
JSON_TEXT_ANSWER = """,
or {"answer": "<your reply>"} when you need no more tools."""


def _forced_tool(choice: Any) -> str | None:
    """The tool a ``tool_choice`` names (``{"type": "function", "function": {"name": …}}``)."""
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name")
        return name if isinstance(name, str) else None
    return None


def _json_schema_request(body: dict[str, Any], thoughts: bool = False) -> dict[str, Any]:
    """``body`` for the ``json-schema`` format; with ``thoughts`` a call opens with a
    ``thought``."""
    tools = [t["function"] for t in body.pop("tools", []) if "function" in t]
    choice = body.pop("tool_choice", None)
    forced = _forced_tool(choice)
    if forced is not None:
        tools = [t for t in tools if t["name"] == forced] or tools
    body.pop("parallel_tool_calls", None)
    described = "\n".join(
        f"- {t['name']}: {t.get('description', '')}; arguments: "
        f"{json.dumps(t.get('parameters') or {'type': 'object', 'properties': {}})}"
        for t in tools
    )
    names: dict[str, str] = {}
    messages: list[dict[str, Any]] = []
    for m in body.get("messages", []):
        role = m.get("role")
        if role == "assistant" and m.get("tool_calls"):
            lines = []
            thought = _text(m.get("content")).strip()
            for c in m["tool_calls"]:
                names[c.get("id", "")] = c["function"]["name"]
                call = {"tool": c["function"]["name"], "arguments": _arguments(c["function"].get("arguments"))}  # fmt: skip
                lines.append(json.dumps({"thought": thought, **call} if thought else call))
                thought = ""  # one thought, before the first call
            messages.append({"role": "assistant", "content": "\n".join(lines)})
        elif role == "assistant":
            messages.append({"role": "assistant", "content": json.dumps({"answer": _text(m.get("content"))})})  # fmt: skip
        elif role == "tool":
            name = names.get(m.get("tool_call_id", ""), "the tool")
            messages.append({"role": "user", "content": f"Result of {name}: {_text(m.get('content'))}"})  # fmt: skip
        else:
            messages.append(m)
    free_text = choice not in ("required", "any") and forced is None
    extra = JSON_TOOLS.format(
        tools=described,
        call=JSON_THOUGHT_CALL if thoughts else JSON_CALL,
        rest=JSON_TEXT_ANSWER if free_text else ".",
    )
    if messages and messages[0].get("role") == "system":
        messages[0] = {**messages[0], "content": _text(messages[0].get("content")) + extra}
    else:
        messages.insert(0, {"role": "system", "content": extra.strip()})
    body["messages"] = messages
    choices = [_call_schema(t, thoughts) for t in tools]
    if free_text:
        choices.append(
            {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
        )
    body["response_format"] = {"type": "json_object", "schema": {"anyOf": choices}}
    return body


def _call_schema(tool: dict[str, Any], thought: bool) -> dict[str, Any]:
    """One tool's call object: its name and arguments, after a ``thought`` when asked."""
    properties: dict[str, Any] = {"thought": {"type": "string"}} if thought else {}
    properties["tool"] = {"const": tool["name"]}
    properties["arguments"] = grammar_safe(
        tool.get("parameters") or {"type": "object", "properties": {}}
    )
    return {"type": "object", "properties": properties, "required": list(properties)}
