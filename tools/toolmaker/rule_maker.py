"""The rule tool-maker: an SOP's decision over the data its tools return, made once as code
and chosen without labels.

For an SOP whose outcome is a decision over gathered data (SOP-Bench's shape: call the tools,
apply the procedure's scoring or conditions, answer one of its stated values), the model writes
the decision rule as a function ``decide(data)`` (``prompts/rule.py``) from the SOP text and a
few tasks' data.
``samples`` replies are drawn: the first greedy, the rest at a temperature, a seed each. Each
becomes a tool file (``tool_file``), which the sandbox runs on every make input at once
(generated code is untrusted; only the host reads the answers). No label is read. The kept
candidate is the one that reaches the most of the answers the SOP states on the make inputs
(its *reach*: a procedure that names four classes decides between them, so a rule that puts
nearly every input in one class has lost a branch), then the one that agrees most with the
per-input consensus (the answer most candidates give), then fewer failures, then the earlier
sample. Agreement alone is the tool-maker's label-free choice by execution
(``sampling.pseudo_labels``); reach comes first because samples of one small model share
their mistakes: two of four that read a range's bands the same wrong way outvote the one
that reads them right (docs/sopbench-made.md).

The kept file is registered as a model-written version (author ``tool-maker:<model>``), so at
run time it runs in the sandbox at each call and costs no model tokens.
"""

from __future__ import annotations

import builtins
import json
import keyword
import secrets
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sopgraph.nodes.codeact_loop import extract_code
from sopgraph.nodes.sandbox import SandboxLimits, run_code
from sopgraph.prompts.rule import REPAIR, SYSTEM, rule_prompt
from sopgraph.tools.jail_harness import harness
from sopgraph.tools.toolmaker.rule_code import as_function, catches, parsed, reads, unstated

MAX_TOKENS = 1024  # one reply: the rule as code
TEMPERATURE = 0.5  # the samples after the greedy one
EXAMPLES = 2  # make inputs shown in the prompt
BATCH_LIMITS = SandboxLimits(cpu_seconds=60, wall_timeout_s=120, max_tool_calls=0)
_RESERVED = sorted({"data", "answer", *keyword.kwlist, *dir(builtins)})


class RuleMakeError(ValueError):
    """No sampled rule gave a usable answer; the message says what each one did."""


TOOL_FILE = '''"""{node}: the SOP's decision over the data its tools returned, as code.

Written by {model} from the SOP text (the rule tool-maker, tools/toolmaker/rule_maker.py) and
chosen without labels: {why}
"""

from sopgraph.graphs.model import Verdict

ALLOWED = {allowed}
RULE = {rule}
# the program's own names and Python's: a field so named stays in `data` only
RESERVED = frozenset({reserved})


def _typed(value):
    text = value.strip() if isinstance(value, str) else ""
    digits = text[1:] if text.startswith("-") else text
    whole, _, frac = digits.partition(".")
    if whole.isdigit() and (whole == "0" or not whole.startswith("0")) and (frac.isdigit() or "." not in digits):
        return float(text) if "." in text else int(text)
    return value


def _text(value):
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return "" if value is None else str(value).strip()


async def run(input: dict, ctx) -> Verdict:
    data = dict(input)
    for parent in ctx.parents.values():
        if isinstance(parent.observed, dict):
            data.update(parent.observed)
    data = {{k: _typed(v) for k, v in data.items()}}
    scope = {{k: v for k, v in data.items() if k.isidentifier() and k not in RESERVED}}
    scope["data"] = data
    exec(compile(RULE, "<rule>", "exec"), scope)
    # the contract: a function decide(data) returns the answer (code that sets `answer` at
    # its top level is read too)
    answer = scope["decide"](data) if callable(scope.get("decide")) else scope.get("answer")
    if len(ALLOWED) == 1 and not isinstance(answer, dict):
        answer = {{next(iter(ALLOWED)): answer}}
    if not isinstance(answer, dict):
        return Verdict(value="no_data", explanation="the rule set no answer")
    out = {{}}
    for column, values in ALLOWED.items():
        text = _text(answer.get(column))
        match = next((v for v in values if v.lower() == text.lower()), None) if values else text
        if not match:
            return Verdict(
                value="no_data",
                observed={{column: text}},
                explanation=f"{{column}} is {{text!r}}, not one of {{values}}",
            )
        out[column] = match
    return Verdict(value=True, observed=out, explanation="; ".join(f"{{k}}: {{v}}" for k, v in out.items()))
'''


def tool_file(node: str, code: str, allowed: dict[str, list[str]], model: str, why: str) -> str:
    """The tool file for ``code`` (the model's rule, run as a function body when it returns
    early), answering ``allowed``'s fields."""
    return TOOL_FILE.format(
        node=node, model=model, why=why, allowed=json.dumps(allowed, ensure_ascii=False),
        rule=repr(as_function(code)), reserved=repr(_RESERVED),
    )  # fmt: skip


@dataclass
class Candidate:
    sample: int  # 0: the greedy reply
    code: str
    refused: str | None = None  # why it was not run
    answers: list[dict[str, str] | None] = field(default_factory=list)  # one per make input
    errors: list[str | None] = field(default_factory=list)
    agreement: int = 0
    unstated: list[str] = field(default_factory=list)  # values it compares with, never stated
    repaired: str | None = None  # the first reply's problem, sent back once; this is the fix

    @property
    def reach(self) -> int:
        """How many different answers it gave over the make inputs (each a stated value)."""
        return len({k for a in self.answers if (k := _key(a)) is not None})

    @property
    def usable(self) -> int:
        return sum(a is not None for a in self.answers)


@dataclass
class MadeRule:
    node: str
    source: str  # the tool file
    chosen: Candidate
    candidates: list[Candidate]
    inputs: int
    tokens: dict[str, int]
    seconds: float
    calls: int

    def record(self) -> dict[str, Any]:
        """What the make did, kept beside the version (``v<N>.make.json``)."""
        return {
            "maker": "rule",
            "node": self.node,
            "inputs": self.inputs,
            "chosen": self.chosen.sample,
            "candidates": [
                {
                    "sample": c.sample,
                    "refused": c.refused,
                    "repaired": c.repaired,
                    "unstated": c.unstated,
                    "usable": c.usable,
                    "reach": c.reach,
                    "agreement": c.agreement,
                    "errors": sorted({e for e in c.errors if e})[:5],
                    "code": c.code,
                }
                for c in self.candidates
            ],  # fmt: skip
            "tokens": self.tokens,
            "seconds": self.seconds,
            "calls": self.calls,
        }


def _key(answer: dict[str, str] | None) -> str | None:
    return None if answer is None else json.dumps(answer, sort_keys=True)


def choose(candidates: list[Candidate]) -> Candidate | None:
    """The candidate that reaches the most stated answers over the make inputs, then agrees
    most with the per-input consensus of the usable answers (then: more usable answers, the
    earlier sample); None when none gave one."""
    ran = [c for c in candidates if c.refused is None and c.usable]
    if not ran:
        return None
    inputs = len(ran[0].answers)
    consensus = []
    for i in range(inputs):
        votes = Counter(k for c in ran if (k := _key(c.answers[i])) is not None)
        consensus.append(votes.most_common(1)[0][0] if votes else None)
    for c in ran:
        c.agreement = sum(
            k is not None and k == consensus[i] for i, k in enumerate(map(_key, c.answers))
        )
    return max(ran, key=lambda c: (not c.unstated, c.reach, c.agreement, c.usable, -c.sample))


async def run_candidate(
    source: str, node: str, cases: list[dict[str, Any]]
) -> tuple[list[dict[str, str] | None], list[str | None]]:
    """Run the tool file on every case in one sandbox run; each case's answer or error."""
    nonce = secrets.token_hex(8)
    result = await run_code(harness(source, cases, nonce), None, BATCH_LIMITS)
    rows: dict[int, dict[str, Any]] = {}
    for line in result.stdout.splitlines():
        if line.startswith(nonce + " "):
            row = json.loads(line[len(nonce) + 1 :])
            rows[int(row.get("i", len(rows)))] = row
    answers: list[dict[str, str] | None] = []
    errors: list[str | None] = []
    for i in range(len(cases)):
        row = rows.get(i)
        if row is None:
            answers.append(None)
            errors.append(result.reason or "the sandbox stopped before this input")
        elif row.get("error"):
            answers.append(None)
            errors.append(str(row["error"]).splitlines()[-1][:200])
        elif row.get("value") in (True, "true") and isinstance(row.get("observed"), dict):
            answers.append({str(k): str(v) for k, v in row["observed"].items()})
            errors.append(None)
        else:
            answers.append(None)
            errors.append(str(row.get("explanation") or "no answer")[:200])
    return answers, errors


def _tokens(replies: list[Any]) -> dict[str, int]:
    out = {"prompt": 0, "completion": 0}
    for r in replies:
        usage = getattr(r, "usage_metadata", None) or {}
        out["prompt"] += int(usage.get("input_tokens", 0))
        out["completion"] += int(usage.get("output_tokens", 0))
    return out


async def make_rule(
    model: Any,
    node: str,
    sop: str,
    cases: list[dict[str, Any]],
    allowed: dict[str, list[str]],
    samples: int,
    model_name: str = "",
    progress: Callable[[int, int, str], None] | None = None,
    repairs: bool = True,
) -> MadeRule:
    """Make ``node``'s rule tool from ``sop`` and the make inputs ``cases`` (the sandbox
    harness's cases: ``input``, ``params``, ``node_id``, ``text``, ``parents``); no label is
    read. ``model``: a LangChain chat model. With ``repairs``, a sample with a problem
    (``_problem``) goes back once with it, and the fix takes its place unless it is less sound.

    Raises:
        RuleMakeError: no candidate gave a usable answer on any make input.
    """
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    from sopgraph.nodes.agent_middleware import content_text

    start = time.perf_counter()
    data = [_data(c) for c in cases]
    examples = data[:EXAMPLES]
    answers = [v for vals in allowed.values() for v in vals]
    shared = _shared_values(data)
    chat = [SystemMessage(SYSTEM), HumanMessage(rule_prompt(sop, examples, allowed))]

    async def tried(sample: int, reply: Any, repaired: str | None = None) -> Candidate:
        text = content_text(reply.content)
        cand = Candidate(sample=sample, code=extract_code(text) or text.strip(), repaired=repaired)
        cand.refused = _refusal(cand.code, examples[0])
        if cand.refused is None:
            cand.unstated = unstated(cand.code, sop, answers, shared)
            source = tool_file(node, cand.code, allowed, model_name, "candidate")
            cand.answers, cand.errors = await run_candidate(source, node, cases)
        return cand

    replies, candidates = [], []
    for sample in range(samples):
        bound = model if sample == 0 else model.bind(temperature=TEMPERATURE, seed=sample)
        reply = await bound.ainvoke(chat, max_tokens=MAX_TOKENS)
        replies.append(reply)
        cand = await tried(sample, reply)
        problem = _problem(cand, len(cases))
        if problem is not None and repairs:
            ask = [
                *chat,
                AIMessage(content_text(reply.content)),
                HumanMessage(REPAIR.format(problem=problem)),
            ]
            fix = await bound.ainvoke(ask, max_tokens=MAX_TOKENS)
            replies.append(fix)
            fixed = await tried(sample, fix, repaired=problem)
            if _soundness(fixed) >= _soundness(cand):
                cand = fixed
        candidates.append(cand)
        if progress is not None:
            state = cand.refused or f"{cand.usable}/{len(cases)} answered"
            if cand.repaired:
                state += " (repaired)"
            progress(sample + 1, samples, state)
    chosen = choose(candidates)
    if chosen is None:
        why = "; ".join(
            f"sample {c.sample}: {c.refused or next((e for e in c.errors if e), 'no answer')}"
            for c in candidates
        )
        raise RuleMakeError(f"{node}: no sampled rule gave a usable answer ({why})")
    why = (
        f"sample {chosen.sample} of {samples}, reaching {chosen.reach} of the stated answers "
        f"and agreeing with the candidates' consensus on {chosen.agreement} of {len(cases)} "
        f"make inputs, {chosen.usable} answered"
    )
    return MadeRule(
        node=node,
        source=tool_file(node, chosen.code, allowed, model_name, why),
        chosen=chosen,
        candidates=candidates,
        inputs=len(cases),
        tokens=_tokens(replies),
        seconds=round(time.perf_counter() - start, 2),
        calls=len(replies),
    )


def _refusal(code: str, data: dict[str, Any]) -> str | None:
    """Why ``code`` is not run at all, or None."""
    if parsed(code) is None:
        return "the code does not parse"
    if not reads(code, data):
        return "the code never reads `data` (a constant answer)"
    if catches(code):
        return "the code catches errors itself (try/except)"
    return None


def _problem(cand: Candidate, inputs: int) -> str | None:
    """What goes back to the model: why the code was not run, the values it compares with
    that the SOP never states, or the error it gave on every make input; None when sound."""
    if cand.refused == "the code does not parse":
        try:
            compile(cand.code, "<rule>", "exec")
        except SyntaxError as exc:
            return f"it does not parse: {exc.msg} (line {exc.lineno})"
    if cand.refused:
        return cand.refused.replace("the code", "it", 1)
    if cand.unstated:
        values = ", ".join(repr(v) for v in cand.unstated)
        return f"it compares data with {values}, which the procedure never states"
    if not cand.usable:
        error = next((e for e in cand.errors if e), "no answer")
        return f"it answered none of the {inputs} tasks: {error}"
    return None


def _soundness(cand: Candidate) -> tuple[bool, bool, bool]:
    return (cand.refused is None, cand.usable > 0, not cand.unstated)


def _shared_values(data: list[dict[str, Any]]) -> set[str]:
    """The text values every input has in the same field (the run input's type); none from
    a single input, where every value would be."""
    if len(data) < 2:
        return set()
    first = data[0]
    return {v for k, v in first.items() if isinstance(v, str) and all(d.get(k) == v for d in data)}


def _data(case: dict[str, Any]) -> dict[str, Any]:
    """One make input's ``data`` as the rule sees it: its input, then its parents' records."""
    from sopgraph.tools.toolmaker.rule_code import typed

    data = dict(case.get("input", {}))
    for parent in case.get("parents", {}).values():
        if isinstance(parent.get("observed"), dict):
            data.update(parent["observed"])
    return {k: typed(v) for k, v in data.items()}
