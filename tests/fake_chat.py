"""The fake chat models the tests share (LangChain's own fakes raise on ``bind_tools``).

- ``ScriptedChatModel``: replies from a list or a ``responder(messages)``; records prompts.
- ``ScriptedAgentModel``: a deterministic, rule-based agent that plays CodeAct and tool calling.
- ``FakeChatServer``: an OpenAI-compatible HTTP endpoint whose replies a function writes, for
  what sits at the HTTP layer (the model front, cassettes, tool-call parsing).

Neither is a provider: what a real model does is measured live and replayed from cassettes
(``tests/cassettes/``). ``bind_tools`` returns a copy and leaves the model itself unchanged.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field


class Recorder:
    """What a fake model and every copy ``bind_tools`` made of it saw (shared by the copies)."""

    def __init__(self) -> None:
        self.seen: list[list[BaseMessage]] = []
        self.kwargs: list[dict[str, Any]] = []  # each call's bound settings (temperature, seed)
        self.bound: list[Any] = []
        self.i = 0


class ScriptedChatModel(FakeMessagesListChatModel):
    """Replies from a list (in order, the last one repeating) or from ``responder(messages)``.

    ``bind_tools`` returns a copy bound to the tools; the model and its copies share one
    ``Recorder``, so ``seen`` (every prompt) and ``bound_tools`` (the last tools bound) can be
    asserted on the model a test made. Usage metadata counts whitespace-separated words so token
    accounting can be tested.

    Example:
        >>> m = ScriptedChatModel(responses=[AIMessage("print(1)")])
        >>> m.bind_tools([]).invoke("hi").content
        'print(1)'
    """

    responses: list[BaseMessage] = []
    responder: Callable[[list[BaseMessage]], BaseMessage] | None = None
    tools: list[Any] = []
    recorder: Recorder = Field(default_factory=Recorder)

    @property
    def seen(self) -> list[list[BaseMessage]]:
        return self.recorder.seen

    @property
    def bound_tools(self) -> list[Any]:
        return self.recorder.bound

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        self.recorder.bound = list(tools)
        return self.model_copy(update={"tools": list(tools)})

    def _generate(
        self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs: Any
    ) -> ChatResult:
        self.recorder.seen.append(list(messages))
        self.recorder.kwargs.append(dict(kwargs))
        if self.responder is not None:
            reply = self.responder(messages)
        else:
            reply = self.responses[min(self.recorder.i, len(self.responses) - 1)]
            self.recorder.i += 1
        if isinstance(reply, AIMessage) and reply.usage_metadata is None:
            n_in = sum(len(str(m.content).split()) for m in messages)
            n_out = max(1, len(str(reply.content).split()))
            reply = reply.model_copy(
                update={
                    "usage_metadata": {
                        "input_tokens": n_in,
                        "output_tokens": n_out,
                        "total_tokens": n_in + n_out,
                    }
                }
            )
        return ChatResult(generations=[ChatGeneration(message=reply)])

    @property
    def _llm_type(self) -> str:
        return "scripted-chat-model"


# -- ScriptedAgentModel -----------------------------------------------------------------------
# It plays a plausible agent so that a test can drive every LLM path of sopgraph (prompt, sandbox,
# MCP calls, verdict extraction, token accounting) fast and offline, without pretending to be
# smart; what a real model does is measured live and replayed from cassettes (tests/cassettes/):
#
# - CodeAct: turn 1 writes code calling the most query-like function the prompt offers, with
#   arguments guessed from the data hint, site, time and alarm, and prints the result; turn 2
#   answers ``VERDICT: true`` when the first number it saw exceeds the first number of the check
#   text (``no_data`` when it saw none or got an error).
# - Tool calling (sub-agent, router): calls the first bound tool, then reports what it returned.
#
# Token counts are estimates (4 characters a token), so ``tokens per alarm`` is non-zero and
# proportional to what a real model would read and write.
#

MODEL_NAME = "scripted"
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_VALUE = re.compile(r'"(?:value|[a-z_]*(?:pct|count|rate|min|avg|mean))"\s*:\s*(-?\d+(?:\.\d+)?)')
_FUNCTION = re.compile(r"^- (\w+)\((.*)\)\s*\n(?:    (.*))?", re.M)
_COUNTERS = {"page", "page_size", "total", "next_page", "series_total", "minutes"}
_PREFERENCE = ("execute_query", "query", "get_metric", "metric", "list_metrics")


def estimate_tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4))


def _text(message: BaseMessage) -> str:
    return message.content if isinstance(message.content, str) else json.dumps(message.content)


def _line(prompt: str, label: str) -> str:
    match = re.search(rf"^{label}:\s*(.*)$", prompt, re.M)
    return match.group(1).strip() if match else ""


def _question(prompt: str) -> str:
    match = re.search(r"## The check\n(.*?)\n\n", prompt, re.S)
    return match.group(1).strip() if match else ""


def _choose(functions: list[tuple[str, str, str]]) -> tuple[str, str, str] | None:
    for word in _PREFERENCE:
        for fn in functions:
            if word in fn[0]:
                return fn
    return functions[0] if functions else None


def _argument(name: str, kind: str, ctx: dict[str, Any]) -> Any:
    lower = name.lower()
    alarm = ctx["alarm"]
    if name in alarm:
        return alarm[name]
    if "metric" in lower or lower == "name":
        return ctx["metric"]
    if lower in ("site", "warehouse", "fc", "site_id"):
        return ctx["site"]
    if "time" in lower or lower in ("at", "end", "ts"):
        return ctx["timestamp"]
    if lower in ("sql", "query") and "promql" in ctx["description"].lower():
        labels = {"site": ctx["site"], "station": alarm.get("station")}
        matcher = ",".join(f'{k}="{v}"' for k, v in labels.items() if v)
        return f"avg_over_time({ctx['metric']}{{{matcher}}}[15m])"
    if lower in ("sql", "query"):
        return f"SELECT * FROM {ctx['metric'] or 'metrics'} WHERE site = '{ctx['site']}' LIMIT 20"
    for key, value in alarm.items():
        if lower in key.lower() or key.lower() in lower:
            return value
    if kind in ("int", "float"):
        return 15
    return ctx["metric"] or ctx["site"]


def codeact_code(prompt: str) -> str:
    """Turn 1: call the most query-like function with guessed arguments and print the result."""
    functions = _FUNCTION.findall(prompt)
    chosen = _choose(functions)
    if chosen is None:
        return "print('no functions are available for this check')"
    name, params, description = chosen
    hint = _line(prompt, r"Data that decides it \([^)]*\)").split(",")[0].strip()
    try:
        alarm = json.loads(_line(prompt, "Input") or "{}")
    except json.JSONDecodeError:
        alarm = {}
    alarm = alarm if isinstance(alarm, dict) else {}
    ctx = {
        "metric": hint.split(".", 1)[1] if "." in hint else ("" if hint == "none" else hint),
        "site": str(alarm.get("site", "")),
        "timestamp": _line(prompt, r"Time of the input \(NOW\)"),
        "alarm": alarm,
        "description": description or "",
    }
    args = []
    for param in filter(None, (p.strip() for p in params.split(","))):
        pname, _, kind = param.partition(":")
        if "=" in param and not (pname.strip() == "time" and ctx["timestamp"]):
            continue  # optional: keep the default, except the alarm's time
        kind = kind.split("=")[0]
        args.append(f"{pname.strip()}={_argument(pname.strip(), kind.strip(), ctx)!r}")
    return (
        "import json\n"
        "try:\n"
        f"    result = {name}({', '.join(args)})\n"
        "except Exception as exc:\n"
        "    print('ERROR:', exc)\n"
        "else:\n"
        "    print(json.dumps(result, default=str)[:1500])\n"
    )


def codeact_answer(question: str, output: str) -> str:
    """Turn 2: a naive comparison of the first value seen with the first number of the check."""
    if "ERROR:" in output or "Error:" in output:
        return "ANSWER: the query failed, so the data is missing.\nVERDICT: no_data"
    if re.search(r'"value"\s*:\s*null', output):
        return "ANSWER: the metric has no value here.\nVERDICT: no_data"
    observed = first_value(output.split("Output:", 1)[-1].strip())
    if observed is None:
        return "ANSWER: the query returned no value.\nVERDICT: no_data"
    limits = _NUMBER.findall(question)
    threshold = float(limits[0]) if limits else 0.0
    value = "true" if observed > threshold else "false"
    return (
        f"ANSWER: scripted rule: observed {observed:g} against {threshold:g}, the first number "
        f"of the check.\nVERDICT: {value}\nOBSERVED: {observed:g}\nTHRESHOLD: {threshold:g}"
    )


def first_value(output: str) -> float | None:
    """The first number of the printed result: under a ``value`` key if any, else any leaf.

    Counters of the response envelope (page, total, ...) and digits inside labels (``BFI4``)
    are not values.
    """
    try:
        data = json.loads(output)
    except json.JSONDecodeError:
        match = _VALUE.search(output)
        numbers = [match.group(1)] if match else _NUMBER.findall(output)
        return float(numbers[0]) if numbers else None
    found: list[tuple[int, float]] = []

    def walk(node: Any, key: str = "", rank: int = 1) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k not in _COUNTERS:
                    walk(v, k, 0 if k in ("value", "values") else rank)
        elif isinstance(node, list):
            for item in node:
                walk(item, key, rank)
        elif isinstance(node, bool) or node is None:
            return
        elif isinstance(node, int | float):
            if not (key in ("value", "values") and node > 1e9):  # a unix timestamp
                found.append((rank, float(node)))
        elif isinstance(node, str) and re.fullmatch(r"-?\d+(?:\.\d+)?", node.strip()):
            found.append((rank, float(node)))

    walk(data)
    return min(found, key=lambda f: f[0])[1] if found else None


def _default_args(schema: dict[str, Any]) -> dict[str, Any]:
    params = schema.get("parameters") or {}
    props = params.get("properties") or {}
    out: dict[str, Any] = {}
    for name in params.get("required") or []:
        prop = props.get(name) or {}
        if prop.get("enum"):
            out[name] = prop["enum"][0]
        else:
            out[name] = {"integer": 0, "number": 0, "boolean": True, "array": []}.get(
                prop.get("type"), ""
            )
    return out


def tool_answer(content: str) -> str:
    """After a tool call: report what the tool returned, with its verdict when it has one."""
    try:
        data = json.loads(content)
    except (json.JSONDecodeError, TypeError):
        data = None
    if isinstance(data, dict) and data.get("value") in ("true", "false", "no_data"):
        return (
            f"ANSWER: the tool reported {data.get('explanation') or data['value']}.\n"
            f"VERDICT: {data['value']}\nOBSERVED: {json.dumps(data.get('observed'))}\n"
            f"THRESHOLD: {json.dumps(data.get('threshold'))}"
        )
    return f"ANSWER: the tool returned {str(content)[:300]}"


class ScriptedAgentModel(FakeMessagesListChatModel):
    """Rule-based replies, estimated token usage, a ``bind_tools`` that returns a copy."""

    responses: list[BaseMessage] = []
    bound_tools: list[dict[str, Any]] = []
    model_name: str = MODEL_NAME

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedAgentModel:
        # a copy, not self: nodes of one layer bind different tools concurrently
        return self.model_copy(update={"bound_tools": [convert_to_openai_tool(t) for t in tools]})

    def reply(self, messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1] if messages else HumanMessage("")
        if self.bound_tools:
            if isinstance(last, ToolMessage):
                return AIMessage(tool_answer(_text(last)))
            fn = self.bound_tools[0]["function"]
            call = {"name": fn["name"], "args": _default_args(fn), "id": f"call_{len(messages)}"}
            return AIMessage("", tool_calls=[call])
        system = next((_text(m) for m in messages if isinstance(m, SystemMessage)), "")
        if "## Functions" not in system:
            return AIMessage(
                "ANSWER: the scripted model has no rule for this prompt.\nVERDICT: no_data"
            )
        outputs = [
            _text(m)
            for m in messages
            if isinstance(m, HumanMessage) and _text(m).startswith("Output:")
        ]
        if not outputs:
            return AIMessage(f"I will query the data.\n```python\n{codeact_code(system)}```")
        return AIMessage(codeact_answer(_question(system), outputs[-1]))

    def _generate(
        self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs: Any
    ) -> ChatResult:
        reply = self.reply(messages)
        n_in = sum(estimate_tokens(_text(m)) for m in messages)
        n_out = estimate_tokens(_text(reply) + json.dumps(reply.tool_calls))
        reply.usage_metadata = {
            "input_tokens": n_in,
            "output_tokens": n_out,
            "total_tokens": n_in + n_out,
        }
        return ChatResult(generations=[ChatGeneration(message=reply)])

    async def _agenerate(
        self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs: Any
    ) -> ChatResult:
        return self._generate(messages, stop=stop, **kwargs)

    @property
    def _llm_type(self) -> str:
        return "scripted-agent"


def scripted_dspy_lm() -> Any:
    """A DSPy LM that answers every extraction with ``no_data`` (rarely needed: the scripted
    answers state ``VERDICT:``, which the extractor reads without an LM)."""
    from dspy.utils import DummyLM

    answer = {"value": "no_data", "observed": "", "threshold": "",
              "explanation": "scripted model: no reading without a VERDICT line"}  # fmt: skip
    return DummyLM({"": answer})


class FakeChatServer:
    """Answers each chat completion with ``reply(body, n)`` as the assistant's text.

    ``requests`` keeps every body received; ``close()`` stops it (a replay must not need it).
    """

    def __init__(self, reply: Callable[[dict[str, Any], int], str]) -> None:
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(body)
                text = reply(body, len(fake.requests))
                data = json.dumps({
                    "id": f"c{len(fake.requests)}", "object": "chat.completion", "created": 0,
                    "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
                }).encode()  # fmt: skip
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class ScriptedJudge:
    """A condition judge that holds exactly the conditions it is given (no model): stands in
    for ``prompts.judge.ConditionJudge`` inside ``JudgeExecutor(judge=...)``."""

    lm = None
    available = True

    def __init__(self, holds: set[str] | list[str]) -> None:
        self.holds = set(holds)
        self.asked: list[str] = []

    async def ajudge(self, condition: str, context: str) -> Any:
        import dspy

        self.asked.append(condition)
        verdict = condition in self.holds
        return dspy.Prediction(holds=verdict, rationale=f"scripted: {verdict}")
