"""The CodeAct sub-agent's prompt texts: the system prompt (``codeact.md``), its turn messages,
its demonstrations and its typed answer.

Example:
    >>> spec = FunctionSpec(name="metrics_list_metrics", server="metrics", tool="list_metrics")
    >>> "metrics_list_metrics()" in render_functions([spec])
    True
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

TEMPLATE = (Path(__file__).parent / "codeact.md").read_text()
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
_JSON_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool",
               "array": "list", "object": "dict", "null": "None"}  # fmt: skip
DESCRIPTION_CHARS = 300  # a small model's context is a few thousand tokens: keep each tool short

NUDGE_FORMAT = (
    "Your reply had neither a ```python code block nor a final `ANSWER:` with a `VERDICT:` "
    "line. Reply with one of the two."
)
LAST_TURN = "This is your last reply: no more code."
CHECK_FAILED = (
    "Your answer was not taken (answer check `{name}`: {problem}). Write a ```python block "
    "that fixes it; you are asked for the answer again once it has run."
)
"""An answer an answer check refused (``nodes.answer_checks.ANSWER_CHECKS``) goes back with it."""
ANSWER_NOW = (
    "Answer now with one JSON object: "
    '{"observed": the value your code measured (a number; null only if the data is missing), '
    '"comparison": how the check compares it with its threshold (">", ">=", "<", "<=" or "=="), '
    '"threshold": the check\'s threshold (a number), "explanation": one short sentence}.'
)
DEMO_RESULT_CHARS = 400  # one recorded result, as a demonstration shows it


class TypedAnswer(BaseModel):
    """The sub-agent's final answer; on the local model its grammar (JSON schema) forces it."""

    verdict: Literal["true", "false", "no_data"]
    observed: float | None = None
    explanation: str = Field("", max_length=300)


COMPARISONS = {">": lambda a, b: a > b, ">=": lambda a, b: a >= b, "<": lambda a, b: a < b,
               "<=": lambda a, b: a <= b, "==": lambda a, b: a == b}  # fmt: skip


class MeasuredAnswer(BaseModel):
    """What the CodeAct sub-agent answers: the number it measured and the comparison the check
    makes. The host, not the model, turns it into the verdict (``verdict``): a small model
    that reads 0.76 against "more than 3%" still writes "true" often enough to matter."""

    observed: float | None = None
    comparison: Literal[">", ">=", "<", "<=", "=="] | None = None
    threshold: float | None = None
    explanation: str = Field("", max_length=300)

    def verdict(self, threshold: float | None = None) -> TypedAnswer:
        """No value measured: ``no_data``; else ``observed <comparison> threshold``, with the
        SOP's own parameter as the threshold where the node names one (``threshold``)."""
        if threshold is not None:
            self = self.model_copy(update={"threshold": threshold})
        if self.observed is None or self.comparison is None or self.threshold is None:
            value = "no_data"
        else:
            value = (
                "true" if COMPARISONS[self.comparison](self.observed, self.threshold) else "false"
            )
        return TypedAnswer(verdict=value, observed=self.observed, explanation=self.explanation)


ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "observed": {"anyOf": [{"type": "number"}, {"type": "null"}]},
        "comparison": {"enum": list(COMPARISONS)},
        "threshold": {"type": "number"},
        "explanation": {"type": "string", "maxLength": 120},
    },
    "required": ["observed", "comparison", "threshold", "explanation"],
}
"""``MeasuredAnswer`` as the JSON schema llama.cpp decodes under (``explanation`` bounded by
hand: a grammar spells each optional character out,
``nodes/models/_grammar_safe.MAX_GRAMMAR_REPEAT``)."""


def answer_schema(threshold: float | None = None) -> dict[str, Any]:
    """``ANSWER_SCHEMA``, with the threshold fixed to the SOP parameter the node names."""
    if threshold is None:
        return ANSWER_SCHEMA
    props = {**ANSWER_SCHEMA["properties"], "threshold": {"const": threshold}}
    return {**ANSWER_SCHEMA, "properties": props}


def code_grammar(functions: list[str]) -> str:
    """A GBNF grammar for a code reply: one ```python block whose first statement calls one of
    ``functions``: ``r1 = <function>(``. A small model then reads data instead of defining
    look-alike functions (or listing imports) and answering from them; it may import later."""
    names = " | ".join(json.dumps(f) for f in sorted(functions))
    return "\n".join([
        'root ::= "```python\\n" "r1 = " fn "(" body "```"',
        f"fn ::= {names}",
        "body ::= [^`]*",
    ])  # fmt: skip


def parse_answer(text: str, threshold: float | None = None) -> TypedAnswer | None:
    """The answer a reply holds (its first JSON object), as a verdict: a measured answer's
    comparison decided here (against ``threshold``, the node's parameter, where it has one),
    or a verdict stated outright (a hosted or scripted model)."""
    start = (text or "").find("{")
    if start < 0:
        return None
    try:
        data, _ = json.JSONDecoder().raw_decode(text[start:])
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    try:
        if "verdict" not in data and "comparison" in data:
            return MeasuredAnswer.model_validate(data).verdict(threshold)
        if isinstance(data.get("verdict"), bool):
            data["verdict"] = "true" if data["verdict"] else "false"
        return TypedAnswer.model_validate(data)
    except ValueError:
        return None


def series_values(result):
    """The value of each series of a metric query's result, as floats."""
    if isinstance(result, dict) and "columns" in result:
        raise TypeError(
            "series_values() reads a metric query's result; this is a table query's result: "
            "read its rows with table_rows()"
        )
    out = []
    for series in (result.get("data") or {}).get("result") or []:
        if "value" in series:
            out.append(float(series["value"][1]))
    return out


def table_rows(result):
    """The rows of a table query's result, each a dict of column -> value."""
    if isinstance(result, dict) and "data" in result and "columns" not in result:
        raise TypeError(
            "table_rows() reads a table query's result; this is a metric query's result: "
            "read its numbers with series_values()"
        )
    columns = result.get("columns") or []
    return [dict(zip(columns, row, strict=False)) for row in result.get("rows") or []]


PRELUDE_FUNCTIONS = (series_values, table_rows)
"""Defined in the sandbox before the model's code runs (``prelude``), as they are here; each
refuses the other kind of result rather than return nothing for it."""
# read once, at import: a source file edited while a long run goes on does not change it
HELPERS = [inspect.getsource(f) for f in PRELUDE_FUNCTIONS]


def prelude(now: str) -> str:
    """The code the sandbox runs before the model's: ``NOW`` and the result helpers."""
    return "\n".join([f"NOW = {now!r}", *HELPERS]) + "\n"


class DemoCall(BaseModel):
    """One MCP call a demonstration made: the function, its arguments and what came back."""

    function: str
    args: dict[str, Any]
    result: Any = None


class DemoRun(BaseModel):
    """A library node's spec run on this input: its calls and the verdict it reached."""

    node: str
    text: str
    calls: list[DemoCall]
    compute: list[str] = Field(default_factory=list)  # the Python from the results to the value
    data: list[str] = Field(default_factory=list)  # the node's data hints (not shown)
    comparison: str = ""
    threshold: Any = None
    verdict: str
    observed: Any = None
    explanation: str = ""
    score: float = 0.0


def _literal(value: Any, now: str) -> str:
    if isinstance(value, str) and value == now and now:
        return "NOW"
    return repr(value)


def _shown(result: Any) -> tuple[str, Any]:
    """How a demonstration prints a result: through the helper its shape calls for."""
    if isinstance(result, dict) and isinstance(result.get("data"), dict):
        return "series_values", series_values(result)
    if isinstance(result, dict) and "rows" in result:
        return "table_rows", table_rows(result)
    return "", result


def _clipped(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= DEMO_RESULT_CHARS else text[: DEMO_RESULT_CHARS - 1] + "…"


def _sentence(demo: DemoRun) -> str:
    """A demonstration's explanation in words (the spec's own is code-like, and the model
    copied it into f-strings that did not parse)."""
    if demo.observed is None:
        return "no value was measured"
    holds = "holds" if demo.verdict == "true" else "does not hold"
    return f"measured {demo.observed:g}; {demo.comparison} {demo.threshold:g} {holds}"


def render_demo(demo: DemoRun, now: str) -> str:
    """One demonstration: its calls, the rows it read (a table's shape), the computation of its
    value (when known, else every result printed), what that printed and the typed answer."""
    lines, printed = [], []
    for i, call in enumerate(demo.calls, 1):
        args = ", ".join(f"{k}={_literal(v, now)}" for k, v in call.args.items())
        lines.append(f"r{i} = {call.function}({args})")
        helper, shown = _shown(call.result)
        if not demo.compute or helper == "table_rows":
            lines.append(f"print({helper}(r{i}))" if helper else f"print(r{i})")
            printed.append(_clipped(shown))
    if demo.compute:
        lines += demo.compute
        printed.append(_clipped(demo.observed))
    answer = {"observed": demo.observed, "comparison": demo.comparison,
              "threshold": demo.threshold, "explanation": _sentence(demo)}  # fmt: skip
    code = "\n".join(lines)
    return (
        f"Check: {demo.text}\n```python\n{code}\n```\nOutput:\n"
        + "\n".join(printed)
        + f"\nAnswer: {json.dumps(answer, default=str)} (so the verdict is {demo.verdict})"
    )


def render_demos(demos: list[DemoRun], now: str) -> str:
    if not demos:
        return "(none)"
    return "\n\n".join(f"Example {i}. {render_demo(d, now)}" for i, d in enumerate(demos, 1))


class FunctionSpec(BaseModel):
    """An MCP tool as the sub-agent sees it: a function ``<server>_<tool>``."""

    name: str
    server: str
    tool: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=dict)


def _type_of(prop: dict[str, Any]) -> str:
    kind = prop.get("type")
    if isinstance(kind, list):
        return " | ".join(_JSON_TYPES.get(k, str(k)) for k in kind)
    if kind:
        return _JSON_TYPES.get(kind, str(kind))
    options = prop.get("anyOf") or prop.get("oneOf") or []
    kinds = [_type_of(o) for o in options if isinstance(o, dict)]
    return " | ".join(k for k in kinds if k) or "Any"


def signature(spec: FunctionSpec) -> str:
    """``name(a: str, b: int = 5)`` from the tool's JSON input schema, required parameters first."""
    props: dict[str, Any] = spec.input_schema.get("properties") or {}
    required = set(spec.input_schema.get("required") or [])
    params = [f"{n}: {_type_of(p)}" for n, p in props.items() if n in required]
    for name, prop in props.items():
        if name not in required:
            params.append(f"{name}: {_type_of(prop)} = {prop.get('default')!r}")
    return f"{spec.name}({', '.join(params)})"


def render_functions(specs: list[FunctionSpec]) -> str:
    if not specs:
        return "(none: no metric server is available for this check; answer no_data)"
    blocks = []
    for spec in specs:
        desc = " ".join(spec.description.split())
        if len(desc) > DESCRIPTION_CHARS:
            desc = desc[: DESCRIPTION_CHARS - 1] + "…"
        blocks.append(f"- {signature(spec)}\n    {desc}" if desc else f"- {signature(spec)}")
    return "\n".join(blocks)


def _compact(value: Any) -> str:
    if value in (None, "", {}, []):
        return "none"
    return json.dumps(value, default=str, separators=(", ", ": "))


def render_system_prompt(
    *,
    question: str,
    functions: list[FunctionSpec],
    imports: tuple[str, ...] | list[str],
    max_turns: int,
    now: str = "",
    given: dict[str, Any] | None = None,
    params: dict[str, Any] | None = None,
    parents: dict[str, Any] | None = None,
    data: list[str] | None = None,
    demos: list[DemoRun] | None = None,
) -> str:
    """The CodeAct system prompt for one node: the rules (the same for every node), the
    functions, the demonstrations (other checks, on this input's data), then the check: what
    differs between nodes comes last, so a local server reuses the shared beginning."""
    values = {
        "question": " ".join(question.split()),
        "now": now or "unknown",
        "input": _compact(given),
        "params": _compact(params),
        "parents": _compact(parents),
        "data": ", ".join(data or []) or "none",
        "functions": render_functions(functions),
        "imports": ", ".join(imports),
        "max_turns": str(max_turns),
        "demos": render_demos(demos or [], now),
    }
    # Only known names are replaced, so braces in the template's prose stay as written.
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), TEMPLATE)


def _output(stdout: str, error: str | None) -> list[str]:
    """What a step printed, and its error if any."""
    parts = [f"Output:\n{stdout.rstrip() or '(nothing printed)'}"]
    if error:
        parts.append(f"Error:\n{error.rstrip()}")
    return parts


def render_observation(stdout: str, error: str | None, turns_left: int) -> str:
    """What the model is shown after its code ran."""
    parts = _output(stdout, error)
    if turns_left <= 1:
        parts.append(LAST_TURN)
    return "\n\n".join(parts)


REPEATED_CODE = (
    "This is the code you already ran (it was not run again): change it to read the data "
    "another way, or answer."
)


def render_answer_turn(stdout: str, error: str | None, last: bool) -> str:
    """The observation of a step that read data, followed by the request for the typed answer."""
    parts = _output(stdout, error)
    parts.append((LAST_TURN + " " if last else "") + ANSWER_NOW)
    return "\n\n".join(parts)
