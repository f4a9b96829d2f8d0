"""Decide by code: the model writes Python that applies the SOP's decision rule to what the
agent gathered; the sandbox runs it; the host checks the answer it prints.

Measured on the local 1.5B model (issue 26): the FC and ReAct agents call the right tools with
the right arguments, then name a label their reasoning does not derive ("determined from
scoring analysis", with no scoring). A small code model transcribes a rule stated as
conditions, counts and formulas into code more reliably than it applies one in words, and
code runs the same way every time. So, after an agent answers, one more model call writes the
decision as Python over ``data`` (the task's input and every field its tools returned, a
number written as a string given as the number); the code runs in the sandbox (generated
code is untrusted), and its ``answer`` replaces the agent's when it has every output column
(a bare value, where there is one column) and, where the SOP lists the allowed values, one
of them. Each plain field of ``data`` is a variable too (``fields``: the model reads a few
fields through ``data`` and writes the rest as bare names, as the procedure does). Code that
never reads ``data`` (a constant answer) is refused without running. A
failure goes back to the model once with its error; when the second reply fails too, the
agent's own answer stands. With ``votes`` above 1 (``--votes``), other replies to the same
prompt are sampled and judged the same way, and the answer most of the usable replies give is
taken (self-consistency; a tie goes to the greedy reply). The agent's run is unchanged (its
exchanges are the same), so the step can be measured on the same gathered data against the
agent's own answer.

``--decide verify`` checks the code's answer before it overrides the agent's: the quoting
step (``quote``) runs first; its answer replaces an agent answer that decides nothing (a value
such as "Unable to Decide": ``abstains``), and replaces a decided one only when the plain
code step (``code``), asked only then, gives the same answer. Otherwise the agent's stands
(``decide_verified``). One code reply is one sample; two prompts that agree are evidence, one
alone is a guess against an answer the agent derived from the same data.
"""

from __future__ import annotations

import ast
import builtins
import json
import keyword
import pprint
import re
import time
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel, Field

from sopgraph.evals.sopbench.agent_result import token_usage
from sopgraph.nodes.agent_middleware import ANSWER_TOOL, content_text
from sopgraph.nodes.codeact_window import parsed

ATTEMPTS = 2  # the first reply, then once more with its error
MAX_TOKENS = 1024  # a reply: the rule as code (the local model's default budget is 512)
MARK = "__sopgraph_answer__"
SAMPLE_TEMPERATURE = 0.5  # the other replies a vote samples (as CodeAct's resampling)

SYSTEM = "You write short, plain Python that applies a Standard Operating Procedure's rule."

PROMPT = """<sop>
{sop}
</sop>

An agent followed this procedure for one task. The task's input and every field the tools
returned are the Python dict `data` (already defined):

data = {data}

Write Python that applies the procedure's decision rule to `data` exactly as the procedure
states it (its conditions, counts, formulas and thresholds, in its order), and ends by setting

answer = {{{fields}}}
{allowed}
{quote}Use only `data`; do not call any tool. Reply with one ```python block and nothing else."""

# ``--decide quote``: each step of the code under the procedure's own sentence, copied as a
# comment (grounding the code in the text before writing it: quote first, then apply)
QUOTE = """Above each step of the code, copy the procedure's sentence that the step applies, word
for word, as a `#` comment.
"""

_READS = re.compile(r"\bdata\s*(\[|\.get\b)")
_RESERVED = {"data", "answer", "json"}  # the program's own names
UNREAD = "the code never reads `data`: apply the procedure's rule to its values"

CATCHES = (
    "the code catches errors itself (try/except): write it without try, so that a value the "
    "data lacks makes it fail instead of giving an answer"
)

RETRY = """That code did not give a usable answer: {error}
Write the whole code again, fixed. Reply with one ```python block."""


# Words of a value that names no decision: the agent's "Unable to Decide", "Inconclusive"
_ABSTAINS = re.compile(
    r"\b(unable|cannot|can't|undecided|undetermined|inconclusive|unknown|insufficient)\b", re.I
)


def abstains(answer: dict[str, str] | None) -> bool:
    """The agent decided nothing: no answer, or a value saying it could not decide."""
    return answer is None or any(_ABSTAINS.search(str(v)) for v in answer.values())


class Decision(BaseModel):
    """One decide-by-code step, kept whole in the task's record."""

    by: str  # "code": the code's answer replaced the agent's; "agent": the agent's stands
    answer: dict[str, str] | None = None  # the code's answer, when it was usable
    agent_answer: dict[str, str] | None = None
    code: str = ""  # the last reply's code
    printed: str = ""  # what that code printed (the answer line removed)
    errors: list[str] = Field(default_factory=list)  # why each unusable reply was refused
    attempts: int = 0
    votes: list[dict[str, Any]] = Field(default_factory=list)  # each reply voted on, judged
    why: str = ""  # ``verify``: why the answer it took is the one taken
    steps: list[dict[str, Any]] = Field(default_factory=list)  # ``verify``: its quote and code
    tokens: dict[str, int] = Field(default_factory=dict)
    seconds: float = 0.0


def _parsed(text: str) -> Any:
    """JSON that ``text`` opens with (a note after it, such as the loop guard's, is dropped),
    else the text itself."""
    try:
        return json.JSONDecoder().raw_decode(text.strip())[0]
    except (json.JSONDecodeError, TypeError, AttributeError):
        return text


# A string that is a number written plainly: no sign but minus, no leading zero, no exponent
# (so "0100" and "1e5" stay text: an identifier or code, not a quantity).
_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?")


def typed(value: Any) -> Any:
    """A number written as a string (tools over CSV files return every value so) as the
    number; anything else as it is."""
    text = value.strip() if isinstance(value, str) else ""
    if not _NUMBER.fullmatch(text):
        return value
    return float(text) if "." in text else int(text)


def gathered(inputs: dict[str, Any], messages: list[BaseMessage]) -> dict[str, Any]:
    """The task's input, then every field of every tool result in call order (a field two
    results name keeps the later value); a result that is not a JSON object is kept whole
    under its tool's name. The agent's own ``answer`` call is not data, nor is a failed call
    of a tool that another call of it answered (the model had called such an error message as
    a function); a failure no call made good stays (it may be the answer: "not found").
    Top-level values that are numbers written as strings become numbers (``typed``): the
    rule's code compares them with the SOP's thresholds."""
    data: dict[str, Any] = dict(inputs)
    results = [m for m in messages if isinstance(m, ToolMessage) and m.name != ANSWER_TOOL]
    for m in results:
        if m.status == "error" and any(o.name == m.name and o.status != "error" for o in results):
            continue  # a tool that also answered: its failed call's error is not data
        value = _parsed(content_text(m.content))
        if isinstance(value, dict):
            data.update(value)
        else:
            data[m.name or "result"] = value
    return {k: typed(v) for k, v in data.items()}


def decide_prompt(
    sop: str, data: dict[str, Any], allowed: dict[str, list[str]], quote: bool = False
) -> str:
    fields = ", ".join(f'"{c}": ...' for c in allowed)
    lines = "".join(
        f"`{c}` must be exactly one of: {', '.join(json.dumps(v) for v in vals)}.\n"
        for c, vals in allowed.items()
        if vals
    )
    return PROMPT.format(
        sop=sop.strip(),
        data=pprint.pformat(data, sort_dicts=False, width=100),
        fields=fields,
        allowed=lines,
        quote=QUOTE if quote else "",
    )


def fields(data: dict[str, Any]) -> list[str]:
    """The keys of ``data`` that the program also defines as variables: each that is a plain
    name, not a keyword, a builtin or one of the program's own names. The small model reads
    a few fields as ``data["x"]`` and then writes the rest as bare names, as the procedure
    writes them (``NameError`` on our own shipment_hold and on SOP-Bench); a name that would
    fail anyway now reads its field instead. A name the code assigns is the code's."""
    return [
        k
        for k in data
        if k.isidentifier()
        and not keyword.iskeyword(k)
        and not k.startswith("_")
        and not hasattr(builtins, k)
        and k not in _RESERVED
    ]


def reads(code: str, data: dict[str, Any]) -> bool:
    """The code reads ``data``: indexes it, calls its ``get``, or reads a field's variable."""
    if _READS.search(code):
        return True
    tree = parsed(code)
    names = set(fields(data))
    return tree is not None and any(
        isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in names
        for n in ast.walk(tree)
    )


def program(code: str, data: dict[str, Any]) -> str:
    """The code the sandbox runs: ``data`` defined first, each of its ``fields`` a variable
    too, the answer printed last."""
    return (
        "import json\n"
        f"data = json.loads({json.dumps(data, default=str)!r})\n"
        f"globals().update({{k: data[k] for k in {fields(data)!r}}})\n"
        f"{code}\n"
        f"print({MARK!r} + json.dumps(answer, default=str))\n"
    )


def _text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip()


def checked_answer(
    printed: str, allowed: dict[str, list[str]]
) -> tuple[dict[str, str] | None, str | None]:
    """The answer the code printed, or why it is not usable (one line)."""
    line = next((ln for ln in reversed(printed.splitlines()) if ln.startswith(MARK)), None)
    if line is None:
        return None, "it printed no answer"
    value = _parsed(line[len(MARK) :])
    if len(allowed) == 1 and not isinstance(value, dict | list):
        value = {next(iter(allowed)): value}  # one output column: its value given alone
    if not isinstance(value, dict):
        return None, f"`answer` is {type(value).__name__}, not a dict"
    out: dict[str, str] = {}
    for col, vals in allowed.items():
        if col not in value:
            return None, f"`answer` has no {col!r} key"
        text = _text(value[col])
        if vals:
            match = next((v for v in vals if v.lower() == text.lower()), None)
            if match is None:
                return None, f"answer[{col!r}] is {text!r}, not one of {vals}"
            text = match
        elif not text:
            return None, f"answer[{col!r}] is empty"
        out[col] = text
    return out, None


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _scope_nodes(tree: ast.AST):
    """The nodes of ``tree`` outside any function, lambda or class it defines."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, _SCOPES):
            continue
        yield node
        yield from _scope_nodes(node)


def catches(code: str) -> bool:
    """The code has a ``try`` of its own: an error it catches is an answer the host never
    sees fail (a value the data lacks turned into a default label)."""
    tree = parsed(code)
    return tree is not None and any(isinstance(n, ast.Try | ast.TryStar) for n in ast.walk(tree))


def _stray_breaks(nodes: Any) -> Any:
    """The ``break`` statements among ``nodes`` outside any loop, function or class (a
    SyntaxError as written); a loop's ``else`` is outside that loop."""
    for node in nodes:
        if isinstance(node, _SCOPES):
            continue
        if isinstance(node, ast.Break):
            yield node
        elif isinstance(node, _LOOPS):
            yield from _stray_breaks(node.orelse)
        else:
            yield from _stray_breaks(ast.iter_child_nodes(node))


class _Exit(ast.NodeTransformer):
    def __init__(self, breaks: set[int]):
        self.breaks = breaks

    def visit_Break(self, node: ast.Break) -> ast.AST:
        if id(node) not in self.breaks:
            return node
        return ast.copy_location(ast.Return(ast.Name("answer", ast.Load())), node)


def as_function(code: str) -> str:
    """Code that ``return``s outside a function or ``break``s outside a loop (the procedure's
    "no further step applies" written as an early exit) run as the body of one: a bare
    ``return`` or such a ``break`` returns ``answer``, ``return x`` returns ``x``, and
    ``answer`` is what the body returns. Any other code is returned unchanged."""
    tree = parsed(code)
    if tree is None:
        return code
    returns = [n for n in _scope_nodes(tree) if isinstance(n, ast.Return)]
    breaks = {id(n) for n in _stray_breaks(tree.body)}
    if not returns and not breaks:
        return code
    for node in returns:
        if node.value is None:
            node.value = ast.Name("answer", ast.Load())
    tree = _Exit(breaks).visit(tree)
    rule = ast.FunctionDef(
        name="__sopgraph_rule",
        args=ast.arguments([], [], None, [], [], None, []),
        body=[*tree.body, ast.Return(ast.Name("answer", ast.Load()))],
        decorator_list=[],
        returns=None,
        type_params=[],
    )
    call = ast.Assign(
        [ast.Name("answer", ast.Store())], ast.Call(ast.Name("__sopgraph_rule", ast.Load()), [], [])
    )
    module = ast.Module([rule, call], [])
    return ast.unparse(ast.fix_missing_locations(module))


async def _attempt(
    text: str, data: dict[str, Any], allowed: dict[str, list[str]]
) -> dict[str, Any]:
    """One reply judged: its code, what it printed, and its answer or why it is not usable."""
    from sopgraph.nodes.codeact import clean_traceback, extract_code
    from sopgraph.nodes.sandbox import SandboxLimits, run_code

    code = extract_code(text) or text.strip()
    out: dict[str, Any] = {"code": code, "printed": "", "answer": None, "error": None}
    if not reads(code, data):  # a constant answer applies no rule: refused unrun
        out["error"] = UNREAD
        return out
    if catches(code):  # only the host decides whether the code succeeded
        out["error"] = CATCHES
        return out
    result = await run_code(
        program(as_function(code), data), limits=SandboxLimits(wall_timeout_s=10)
    )
    shown = [ln for ln in result.stdout.splitlines() if not ln.startswith(MARK)]
    out["printed"] = "\n".join(shown)[-2000:]
    if result.ok:
        out["answer"], out["error"] = checked_answer(result.stdout, allowed)
    else:
        lines = clean_traceback(result.error or result.reason or "it failed").splitlines()
        out["error"] = lines[-1] if lines else "it failed"
    return out


def voted(answers: list[dict[str, str] | None]) -> dict[str, str] | None:
    """The answer most usable replies gave; a tie goes to the one given first (the greedy
    reply is first). None when no reply was usable."""
    keys = [json.dumps(a, sort_keys=True) for a in answers if a is not None]
    if not keys:
        return None
    best = max(keys, key=lambda k: (keys.count(k), -keys.index(k)))
    return json.loads(best)


async def decide_by_code(
    model: Any,
    sop: str,
    inputs: dict[str, Any],
    messages: list[BaseMessage],
    allowed: dict[str, list[str]],
    agent_answer: dict[str, str] | None,
    votes: int = 1,
    quote: bool = False,
) -> Decision:
    """Ask ``model`` for the SOP's rule as code over the gathered data; run it in the sandbox.

    ``allowed``: each output column and the values the SOP lists for it ([]: free text).
    ``votes``: with more than 1, ``votes - 1`` other replies are sampled (temperature, a seed
    each, so a recording replays) to the prompt the last greedy reply answered, each run the
    same way, and the answer most usable replies give is taken (``voted``).
    ``quote``: the prompt asks for the procedure's sentence above each step (``QUOTE``).
    """
    start = time.perf_counter()
    data = gathered(inputs, messages)
    chat: list[BaseMessage] = [
        SystemMessage(SYSTEM),
        HumanMessage(decide_prompt(sop, data, allowed, quote)),
    ]
    decision = Decision(by="agent", agent_answer=agent_answer)
    replies: list[BaseMessage] = []
    greedy: dict[str, str] | None = None
    for attempt in range(1, ATTEMPTS + 1):
        asked = list(chat)
        reply = await model.ainvoke(chat, max_tokens=MAX_TOKENS)
        replies.append(reply)
        text = content_text(reply.content)
        decision.attempts = attempt
        tried = await _attempt(text, data, allowed)
        decision.code, decision.printed = tried["code"], tried["printed"]
        if tried["answer"] is not None:
            greedy = tried["answer"]
            break
        decision.errors.append(str(tried["error"]))
        chat += [AIMessage(text), HumanMessage(RETRY.format(error=tried["error"]))]
    answers = [greedy]
    if votes > 1:  # the greedy reply is the first vote
        decision.votes.append(
            {"seed": None, "answer": greedy, "error": None if greedy else decision.errors[-1]}
        )
    for seed in range(1, votes):
        sampler = model.bind(temperature=SAMPLE_TEMPERATURE, seed=seed)
        reply = await sampler.ainvoke(asked, max_tokens=MAX_TOKENS)
        replies.append(reply)
        tried = await _attempt(content_text(reply.content), data, allowed)
        answers.append(tried["answer"])
        decision.votes.append({"seed": seed, **tried})
    answer = voted(answers)
    if answer is not None:
        decision.by, decision.answer = "code", answer
    decision.tokens = token_usage(replies)
    decision.seconds = round(time.perf_counter() - start, 4)
    return decision


async def decide_verified(
    model: Any,
    sop: str,
    inputs: dict[str, Any],
    messages: list[BaseMessage],
    allowed: dict[str, list[str]],
    agent_answer: dict[str, str] | None,
) -> Decision:
    """``--decide verify``: the quoting step's answer replaces an agent answer that decides
    nothing; it replaces a decided one only when the plain code step agrees with it. The plain
    step runs only where its answer can change the outcome (the quoting step's answer differs
    from a decided agent answer, or the agent decided nothing and the quoting step gave no
    usable answer). Both steps are kept in ``steps``."""
    args = (model, sop, inputs, messages, allowed, agent_answer)
    quoted = await decide_by_code(*args, quote=True)
    steps = [quoted]
    undecided = abstains(agent_answer)
    answer, why = None, "the quoted code gave no usable answer: the agent's stands"
    if quoted.answer is not None and undecided:
        answer, why = quoted.answer, "the agent decided nothing: the quoted code's answer"
    elif quoted.answer is not None and quoted.answer == agent_answer:
        why = "the quoted code agrees with the agent"
    elif undecided or quoted.answer is not None:
        plain = await decide_by_code(*args)
        steps.append(plain)
        if undecided:
            answer = plain.answer
            why = (
                "the agent decided nothing and the quoted code gave no usable answer: the plain "
                + ("code's answer" if answer else "code gave none either; the agent's stands")
            )
        elif plain.answer == quoted.answer:
            answer, why = quoted.answer, "the quoted and the plain code agree against the agent"
        elif plain.answer is None:
            why = "the plain code gave no usable answer to check the quoted one: the agent's stands"
        else:
            why = "the quoted and the plain code disagree: the agent's answer stands"
    last = steps[-1]
    decision = Decision(
        by="code" if answer is not None else "agent",
        answer=answer,
        agent_answer=agent_answer,
        code=last.code,
        printed=last.printed,
        errors=[e for step in steps for e in step.errors],
        attempts=sum(step.attempts for step in steps),
        why=why,
        steps=[step.model_dump() for step in steps],
        seconds=round(sum(step.seconds for step in steps), 4),
    )
    for step in steps:
        for k, v in step.tokens.items():
            decision.tokens[k] = decision.tokens.get(k, 0) + v
    return decision
