"""The CodeAct loop: a small LangGraph (``think`` -> ``act`` -> ``think`` ...) that any SOP's node runs.

- ``think`` asks the model for one reply. A code block runs at once in the sandbox (its result
  goes to ``act``); once a step has read data, the next reply is the typed answer
  (``prompts.codeact.MeasuredAnswer``), which a local model decodes under its JSON schema. A
  local model's code replies are constrained too: a ```python block whose first statement
  calls one of the functions.
- **Best of N** (DSPy's ``BestOfN`` with a reward): a code reply whose code fails or reads no
  data has up to ``samples`` other replies drawn (temperature, a seed each, so a recording
  replays); the first whose code runs and reads data (reward 1) takes its place in the
  conversation.
- **Answer checks** (``nodes/answer_checks.py``): an answer a check refuses goes back with
  the check's name; on the last reply the loop ends without a verdict, naming it.
- ``act`` shows the model what the code printed, or its error, with the turns left or the
  request for the answer. Code identical to an earlier step's is not run again.

The host never edits the model's code or its answer. It stops on the answer, on the turn
budget, or on two replies with neither code nor an answer.
"""

from __future__ import annotations

import json
import operator
import re
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from sopgraph.graphs.telemetry import chat_span, record_usage
from sopgraph.graphs.untrusted_text import serialisable
from sopgraph.nodes.answer_checks import ANSWER_CHECKS
from sopgraph.nodes.sandbox import SandboxLimits, SandboxUnavailable, ToolFn, run_code
from sopgraph.prompts.codeact import (
    CHECK_FAILED,
    NUDGE_FORMAT,
    REPEATED_CODE,
    FunctionSpec,
    parse_answer,
    render_answer_turn,
    render_observation,
)

DEFAULT_MAX_TURNS = 6
OBSERVATION_CHARS = 2_000  # what one step shows the model back (the trace keeps more)
SAMPLE_TEMPERATURE = 0.5
TRACE_CHARS = 20_000  # one MCP result or stdout kept in the trace
START_MESSAGE = "Decide the check. Start with a ```python code block."
_CODE = re.compile(r"```(?:python|py|python3)?[ \t]*\n(.*?)(?:```|\Z)", re.S | re.I)
_FINAL = re.compile(r"\b(ANSWER|VERDICT)\s*[:=]", re.I)


def clip(text: str, limit: int) -> str:
    return (
        text
        if len(text) <= limit
        else text[:limit] + f"\n[... {len(text) - limit} more characters]"
    )


def clip_json(value: Any, limit: int = TRACE_CHARS) -> Any:
    """``value`` itself when its JSON is small, else a preview marked as truncated."""
    text = json.dumps(value, default=str)
    return value if len(text) <= limit else {"truncated": True, "preview": text[:limit]}


def extract_code(text: str) -> str | None:
    """The Python the reply holds: every fenced block, joined (an unclosed last fence counts)."""
    blocks = [b.strip("\n") for b in _CODE.findall(text or "")]
    code = "\n".join(b for b in blocks if b.strip())
    return code or None


def is_final_answer(text: str) -> bool:
    return bool(_FINAL.search(text or ""))


def clean_traceback(error: str) -> str:
    """The traceback without the sandbox runner's own frames: only what the model's code did."""
    lines = error.rstrip().splitlines()
    out: list[str] = []
    skip = False
    for line in lines:
        if line.startswith('  File "<string>"'):
            skip = True  # the runner's frame and its source line
            continue
        if skip and line.startswith("    "):
            continue
        skip = False
        out.append(line)
    return "\n".join(out)


def message_text(message: BaseMessage) -> str:
    """Text of a reply whose content may be a list of blocks (Bedrock, Anthropic)."""
    content = message.content
    if isinstance(content, str):
        return content
    parts = [p.get("text", "") if isinstance(p, dict) else str(p) for p in content]
    return "".join(parts)


def model_label(model: Any) -> str:
    for attr in ("model_name", "model", "model_id"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return str(getattr(model, "_llm_type", type(model).__name__))


def reads_data(tool: str | None) -> bool:
    """A call that reads data, not the catalog: after one succeeds the answer is due."""
    name = tool or ""
    return not name.startswith("list_") and "metadata" not in name


@dataclass
class CodeActRun:
    """What one loop runs with (LangGraph runtime context; not part of the state)."""

    model: BaseChatModel
    functions: dict[str, ToolFn]
    specs: dict[str, FunctionSpec]
    limits: SandboxLimits
    max_turns: int = DEFAULT_MAX_TURNS
    label: str = "model"
    answer_model: BaseChatModel | None = None  # the model under the typed answer's grammar
    code_model: BaseChatModel | None = None  # the model under the code reply's grammar
    prelude: str = ""  # code run before the model's: NOW and the result helpers
    threshold: float | None = None  # the SOP parameter the node names (``node_threshold``)
    samples: int = 0  # other code replies drawn for a step that fails or reads no data


class CodeActState(TypedDict, total=False):
    messages: Annotated[list[BaseMessage], operator.add]
    replies: Annotated[list[str], operator.add]
    code: Annotated[list[dict[str, Any]], operator.add]
    mcp_calls: Annotated[list[dict[str, Any]], operator.add]
    turns: int
    garbage: int
    input_tokens: int
    output_tokens: int
    pending: str | None
    prepared: dict[str, Any] | None  # what the chosen sample ran (``_execute``), for ``act``
    answer: str | None
    typed: dict[str, Any] | None
    stop: str | None
    read: bool  # a step read data without an error
    answer_due: bool  # the last step read data: the next reply is the typed answer
    repeats: int  # code replies identical to an earlier step's (each not run again)
    sampled: Annotated[list[dict[str, Any]], operator.add]  # best-of-N draws, one per turn
    refused: Annotated[list[dict[str, Any]], operator.add]  # answers an answer check sent back


def _budget(n: int) -> str:
    return f"turn budget of {n} model replies exhausted without an answer"


async def _ask(run: CodeActRun, model: Any, messages: list[BaseMessage]) -> tuple[str, int, int]:
    """One model reply: its text and its input and output tokens."""
    with chat_span(run.label) as span:
        reply = await model.ainvoke(messages)
        usage = getattr(reply, "usage_metadata", None) or {}
        n_in, n_out = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
        record_usage(span, n_in, n_out, model=run.label)
    # a lone surrogate (JSON's "\ud800" from an endpoint) could be neither run nor stored
    return serialisable(message_text(reply)), n_in, n_out


def _reward(ran: dict[str, Any]) -> float:
    """Best of N's reward: 1 for code that ran and read data, else 0."""
    return 1.0 if ran["step"]["ok"] and ran["read"] else 0.0


async def _best_of_n(
    run: CodeActRun, model: Any, messages: list[BaseMessage], turn: int
) -> tuple[str | None, dict[str, Any] | None, int, int, dict[str, Any]]:
    """Up to ``run.samples`` other replies to ``messages``; the first whose code earns reward 1
    (``_reward``), with what it ran. (None, None, ...) when none does."""
    record: dict[str, Any] = {"turn": turn, "rewards": [], "chosen": None}
    n_in = n_out = 0
    for seed in range(1, run.samples + 1):
        try:
            text, i, o = await _ask(
                run, model.bind(temperature=SAMPLE_TEMPERATURE, seed=seed), messages
            )
        except Exception:  # noqa: BLE001 - a failed draw is one fewer candidate
            break
        n_in, n_out = n_in + i, n_out + o
        code = extract_code(text)
        if code is None:
            record["rewards"].append(0.0)
            continue
        try:
            ran = await _execute(run, code, turn)
        except SandboxUnavailable:
            break
        reward = _reward(ran)
        record["rewards"].append(reward)
        if reward == 1.0:
            return text, ran, n_in, n_out, {**record, "chosen": seed}
    return None, None, n_in, n_out, record


async def think(state: CodeActState, runtime: Runtime[CodeActRun]) -> dict[str, Any]:
    run = runtime.context
    turns = state.get("turns", 0) + 1
    answering = state.get("answer_due", False) or (turns >= run.max_turns and state.get("read"))
    model = (run.answer_model if answering else run.code_model) or run.model
    if state.get("repeats") and not answering:
        # the greedy reply to this prompt is the code already run: draw another (a seed per
        # repeat, so a recording replays)
        model = model.bind(temperature=SAMPLE_TEMPERATURE, seed=state["repeats"])
    try:
        text, n_in, n_out = await _ask(run, model, state["messages"])
    except Exception as exc:  # noqa: BLE001 - a dead endpoint ends the loop with a reason
        first = serialisable((str(exc).splitlines() or [""])[0][:300])
        return {"stop": f"model call failed: {type(exc).__name__}: {first}"}
    update: dict[str, Any] = {
        "turns": turns,
        "input_tokens": state.get("input_tokens", 0) + n_in,
        "output_tokens": state.get("output_tokens", 0) + n_out,
        "replies": [text],
        "messages": [AIMessage(content=text)],
        "answer_due": False,
        "prepared": None,
    }
    typed = parse_answer(text, run.threshold) if answering else None
    code = None if typed is not None else extract_code(text)
    final = typed is not None or (code is None and is_final_answer(text))
    if final:
        for name, check in ANSWER_CHECKS if run.functions else ():
            problem = check(typed, state)
            if problem is None:
                continue
            update["refused"] = [{"turn": turns, "check": name, "problem": problem}]
            if turns >= run.max_turns:
                update["stop"] = f"answer check {name} failed on the last reply: {problem}"
            else:
                update["messages"].append(
                    HumanMessage(content=CHECK_FAILED.format(name=name, problem=problem))
                )
            return update
        update["answer"] = text.strip()
        if typed is not None:
            update["typed"] = typed.model_dump()
        return update
    if code is not None and turns < run.max_turns:
        if not any(step["code"] == code for step in state.get("code", [])):
            try:  # run here, so that best of N can put a better reply in this one's place
                chosen = await _choose(run, state, code, text, turns)
            except SandboxUnavailable as exc:
                return {**update, "stop": f"sandbox unavailable: {exc}"}
            text, code, ran, n_in, n_out, record = chosen
            update |= {"replies": [text], "messages": [AIMessage(content=text)], "prepared": ran,
                       "input_tokens": update["input_tokens"] + n_in,
                       "output_tokens": update["output_tokens"] + n_out}  # fmt: skip
            if record:
                update["sampled"] = [record]
        update["pending"] = code
    elif code is not None:  # code on the last reply could never be followed by an answer
        update["stop"] = _budget(turns)
    elif state.get("garbage", 0) >= 1:
        shown = " ".join(text.split())[:160] or "(empty)"
        update["stop"] = f"the model answered twice with neither code nor ANSWER/VERDICT: {shown!r}"
    elif turns >= run.max_turns:
        update["stop"] = _budget(turns)
    else:
        update["garbage"] = state.get("garbage", 0) + 1
        update["messages"].append(HumanMessage(content=NUDGE_FORMAT))
    return update


async def _choose(
    run: CodeActRun, state: CodeActState, code: str, text: str, turn: int
) -> tuple[str, str, dict[str, Any], int, int, dict[str, Any] | None]:
    """The reply that runs this turn, with what it ran: the model's own, or, where its code
    earns no reward and ``run.samples`` is set, the first draw that does (best of N)."""
    ran = await _execute(run, code, turn)
    if _reward(ran) == 1.0 or not run.samples:
        return text, code, ran, 0, 0, None
    other, better, n_in, n_out, record = await _best_of_n(
        run, run.code_model or run.model, state["messages"], turn
    )
    if other is None or better is None:
        return text, code, ran, n_in, n_out, record
    return other, better["step"]["code"], better, n_in, n_out, record


async def act(state: CodeActState, runtime: Runtime[CodeActRun]) -> dict[str, Any]:
    run = runtime.context
    code, turn = state.get("pending") or "", state.get("turns", 0)
    prepared = state.get("prepared")
    if prepared is None or prepared["step"]["code"] != code:
        # the same code again would fail (or print) the same: not run; the answer is due
        read = state.get("read", False)
        text = _observe(run, turn, REPEATED_CODE, None, answer=read)
        return {"pending": None, "answer_due": read, "messages": [HumanMessage(content=text)],
                "repeats": state.get("repeats", 0) + 1}  # fmt: skip
    due = _reward(prepared) == 1.0
    read = state.get("read", False) or due
    last = run.max_turns - turn <= 1
    shown, error = prepared["shown"], prepared["step"]["error"]
    observation = _observe(run, turn, shown, error, due or (last and read))
    return {"pending": None, "prepared": None, "repeats": 0, "code": [prepared["step"]],
            "mcp_calls": prepared["calls"], "read": read, "answer_due": due,
            "messages": [HumanMessage(content=observation)]}  # fmt: skip


async def _execute(run: CodeActRun, code: str, turn: int) -> dict[str, Any]:
    """Run ``code`` in the sandbox: its trace step, its MCP calls, the output shown back and
    whether a call read data (not the catalog) without an error."""
    result = await run_code(run.prelude + code, run.functions, run.limits)
    error = None
    if not result.ok:
        error = clean_traceback(result.error) if result.error else None
        if result.reason and (not error or result.reason not in error):
            error = f"{error}\n({result.reason})" if error else result.reason
    step = {
        "turn": turn,
        "code": code,
        "ok": result.ok,
        "stdout": clip(result.stdout, TRACE_CHARS),
        "error": error,
        "reason": result.reason,
        "ms": result.duration_ms,
    }
    calls = []
    for call in result.tool_calls:
        spec = run.specs.get(call.tool)
        calls.append(
            {
                "turn": turn,
                "function": call.tool,
                "server": spec.server if spec else None,
                "tool": spec.tool if spec else None,
                "args": call.args,
                "result": clip_json(call.result),
                "error": call.error,
                "ms": call.ms,
            }
        )
    read = any(c["error"] is None and reads_data(c["tool"]) for c in calls)
    return {"step": step, "calls": calls, "shown": clip(result.stdout, OBSERVATION_CHARS),
            "read": read}  # fmt: skip


def _observe(run: CodeActRun, turn: int, stdout: str, error: str | None, answer: bool) -> str:
    """What the model is shown after a step: the output, then the request for the typed
    answer when it is due, else the turns left."""
    if answer:
        return render_answer_turn(stdout, error, run.max_turns - turn <= 1)
    return render_observation(stdout, error, run.max_turns - turn)


def _after_think(state: CodeActState) -> str:
    if state.get("stop") or state.get("answer"):
        return END
    return "act" if state.get("pending") else "think"


def _after_act(state: CodeActState) -> str:
    return END if state.get("stop") else "think"


def build_codeact_graph():
    """The CodeAct loop, compiled without a checkpointer (the trail keeps its trace instead)."""
    builder = StateGraph(CodeActState, context_schema=CodeActRun)
    builder.add_node("think", think)
    builder.add_node("act", act)
    builder.add_edge(START, "think")
    builder.add_conditional_edges("think", _after_think, ["act", "think", END])
    builder.add_conditional_edges("act", _after_act, ["think", END])
    # checkpointer=False: inside an SOP run it must not inherit the run's checkpointer
    return builder.compile(checkpointer=False, name="codeact")


codeact_graph = build_codeact_graph()
