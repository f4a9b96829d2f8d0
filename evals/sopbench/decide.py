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

import json
import pprint
import re
import time
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from sopgraph.evals.sopbench.agent_result import token_usage
from sopgraph.evals.sopbench.gathered import gathered
from sopgraph.nodes.agent_middleware import content_text
from sopgraph.tools.toolmaker.rule_code import (
    MARK,
    as_function,
    catches,
    checked_answer,
    program,
    reads,
)

ATTEMPTS = 2  # the first reply, then once more with its error
MAX_TOKENS = 1024  # a reply: the rule as code (the local model's default budget is 512)
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


async def _attempt(
    text: str, data: dict[str, Any], allowed: dict[str, list[str]]
) -> dict[str, Any]:
    """One reply judged: its code, what it printed, and its answer or why it is not usable."""
    from sopgraph.nodes.codeact_loop import clean_traceback, extract_code
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
