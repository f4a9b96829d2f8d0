"""The CodeAct sub-agent's prompt texts: the system prompt (``codeact.md``), its turn messages,
its demonstrations and its typed answer.

Example:
    >>> spec = FunctionSpec(name="robotics_list_metrics", server="robotics", tool="list_metrics")
    >>> "robotics_list_metrics()" in render_functions([spec])
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
SENT_BACK = (
    "The host did not run this code (its review: {problem}). Write the code again, as one "
    "```python block, without that problem."
)
"""After a reply whose code the review sent back (from level 3 of ``codeact_constrained``):
the other replies are sampled with it and this note, not blind to what was wrong."""
LOOK_FIRST = (
    "You have not read any data yet: call one of the functions in a ```python block first, "
    "then answer from what it printed."
)
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

    def verdict(self, stated: tuple[str, float] | None = None) -> TypedAnswer:
        """No value measured: ``no_data``; else ``observed <comparison> threshold``, with the
        comparison the check's text states (``stated``) over the model's own."""
        if stated is not None:
            self = self.model_copy(update={"comparison": stated[0], "threshold": stated[1]})
        if self.observed is None or self.comparison is None or self.threshold is None:
            value = "no_data"
        else:
            value = (
                "true" if COMPARISONS[self.comparison](self.observed, self.threshold) else "false"
            )
        return TypedAnswer(verdict=value, observed=self.observed, explanation=self.explanation)


_NUM = r"(-?\d+(?:\.\d+)?)"
STATED = (  # how an SOP's text states a check's comparison, each with the number it names
    (r"\b(?:more than|greater than|higher than|above|exceeds?|exceeding)\s+" + _NUM, ">"),
    (r"\bat least\s+" + _NUM, ">="),
    (_NUM + r"\s+or more\b", ">="),
    (r"\b(?:less than|fewer than|lower than|below|under)\s+" + _NUM, "<"),
    (r"\b(?:at most|no more than|up to)\s+" + _NUM, "<="),
    (r"\bwithin(?: the last)?\s+" + _NUM, "<="),
)


def stated_comparison(text: str) -> tuple[str, float] | None:
    """The comparison and threshold the check's text states first ("more than 5%": ``(">",
    5.0)``; "at least 3 stations ... above 6%": ``(">=", 3.0)``), or None when it states none
    ("a ticket is open"). Read from the text with its parameters filled in."""
    low = " ".join((text or "").lower().split())
    found = []
    for pattern, op in STATED:
        match = re.search(pattern, low)
        if match:
            found.append((match.start(), op, float(match.group(1))))
    if not found:
        return None
    _, op, number = min(found)
    return op, number


IMPLIED = (  # a state the text asserts, with no number: what its measured indicator must be
    (r"\breported (?:no|nothing)\b|\bno (?:\w+ )?(?:metrics|data|readings|samples)\b", "=="),
    (r"\b(?:is|was|are|were) in an? (?:\w+ )?state\b|\b(?:is|was) (?:already )?open\b", ">"),
)


def implied_comparison(text: str) -> tuple[str, float] | None:
    """The comparison a check that states no number implies, against 0: a state or a record it
    says is there ("the robot is in a fault state", "a ticket was already open") holds when
    its measured count or indicator is ``> 0``; one it says is missing ("has reported no
    metrics") when it is ``== 0``. None when it says neither, or when it states a number
    (``stated_comparison``). Measured: a model left to choose answered "in a fault state" with
    ``observed < 1``, so that no fault made one."""
    if stated_comparison(text) is not None:
        return None
    low = " ".join((text or "").lower().split())
    for pattern, op in IMPLIED:
        if re.search(pattern, low):
            return op, 0.0
    return None


def answer_schema(stated: tuple[str, float] | None = None) -> dict[str, Any]:
    """``ANSWER_SCHEMA``, with the comparison and threshold fixed where the text states them."""
    if stated is None:
        return ANSWER_SCHEMA
    props = {**ANSWER_SCHEMA["properties"], "comparison": {"const": stated[0]},
             "threshold": {"const": stated[1]}}  # fmt: skip
    return {**ANSWER_SCHEMA, "properties": props}


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


def code_grammar(
    functions: list[str],
    metrics: dict[str, list[str]] | None = None,
    ended: bool = True,
    blocked: dict[str, list[str]] | None = None,
    allowed: dict[str, list[str]] | None = None,
    every: bool = False,
) -> str:
    """A GBNF grammar for a code reply: one ```python block whose first statement calls one of
    ``functions``: ``r1 = <function>(``. A small model then reads data instead of defining
    look-alike functions (or listing imports) and answering from them; it may import later.

    ``metrics`` (a PromQL function: the check's hinted metrics) holds such a function's first
    call to a query of a hinted metric: ``r1 = f(query='avg_over_time(suction_vacuum_kpa``.
    Measured: four replies of four read ``station_idle_pct``, copied from a demonstration, for
    "vacuum averaged below 58 kPa" (docs/agents.md). ``ended``: the metric's name ends there
    (a ``{``, ``[``, ``)``, ``'`` or space follows); without it (as recorded before that) the
    model went on to query ``pick_errorsecutive`` in 4 replies of 4.

    ``blocked`` (a SQL function: name prefixes) holds such a function's first call to SQL
    whose quoted names (``"sorter_jam_events_total"``) start with none of them: the data of
    the demonstrations that is not the check's. Measured: three "upstream jams" checks of
    three read ``sorter_jam_events_total``, copied from two sorter-jam demonstrations, in
    every sample (docs/agents.md). Requiring the hinted name instead (anywhere before the
    literal's end) made the model write ``LIMIT 1000...`` until its tokens ran out.

    ``allowed`` (a SQL function: names) holds such a function's first SQL to double-quoted
    names among them, in place of ``blocked``: the tables that hold the check's data and
    their columns. Measured: "at least 6 sorter chutes are full" queried a table named
    ``conveyance_sorter_chutes_full``, which does not exist, in every sample.

    ``every`` (from level 4): a PromQL function with two or more hinted metrics has its
    reply start with one query of each, in the hints' order (``r1 = f(query='...pick_errors``
    on one line, ``r2 = f(query='...pick_attempts`` on the next). Measured: "the pick error
    rate is above 4.5%" read the errors alone and divided them by the threshold, in the reply
    and its three samples, on four alarms."""
    metrics = {f: m for f, m in (metrics or {}).items() if f in functions and m}
    allowed = {f: a for f, a in (allowed or {}).items() if f in functions and a}
    blocked = {f: b for f, b in (blocked or {}).items()
               if f in functions and b and f not in allowed}  # fmt: skip
    if not metrics and not blocked and not allowed:  # the grammar recorded runs replay with
        names = " | ".join(json.dumps(f) for f in sorted(functions))
        return "\n".join([
            'root ::= "```python\\n" "r1 = " fn "(" body "```"',
            f"fn ::= {names}",
            "body ::= [^`]*",
        ])  # fmt: skip
    several = next(((f, ms) for f, ms in sorted(metrics.items()) if len(ms) > 1), None)
    if every and several is not None:
        return _every_grammar(*several, ended)
    plain = sorted(f for f in functions if f not in metrics and f not in blocked
                   and f not in allowed)  # fmt: skip
    first = ['fn "("'] if plain else []
    end = " end" if ended else ""
    first += [f'{json.dumps(f)} "(query=\'" wrap ({" | ".join(json.dumps(m) for m in sorted(ms))}){end}'
              for f, ms in sorted(metrics.items())]  # fmt: skip
    sql: list[str] = []
    for i, (f, prefixes) in enumerate(sorted(blocked.items())):
        first.append(f'{json.dumps(f)} "(sql=\'" sql{i} "\'"')
        sql += _sql_rules(f"sql{i}", prefixes)
    for i, (f, names) in enumerate(sorted(allowed.items()), len(blocked)):
        first.append(f'{json.dumps(f)} "(sql=\'" sql{i} "\'"')
        sql += [
            f'sql{i} ::= ([^\'`"] | "\\"" sql{i}n "\\"")*',
            f"sql{i}n ::= {' | '.join(json.dumps(n) for n in sorted(set(names)))}",
        ]
    lines = [
        'root ::= "```python\\n" "r1 = " first body "```"',
        f"first ::= {' | '.join(first)}",
        "body ::= [^`]*",
    ]
    if plain:
        lines.append(f"fn ::= {' | '.join(json.dumps(f) for f in plain)}")
    # a bare selector or one range function around it (PromQL's ``<f>_over_time``)
    lines.append('wrap ::= (("avg" | "min" | "max" | "sum" | "count" | "last") "_over_time(")?')
    if ended:  # what may follow a metric's name in a selector
        lines.append("end ::= [{\\[)' ]")
    return "\n".join(lines + sql)


def _every_grammar(function: str, metrics: list[str], ended: bool) -> str:
    """``code_grammar``'s ``every``: the reply's first lines query each of ``metrics`` with
    ``function``, one a line (``r1``, ``r2``, ...), in order; the rest is free."""
    end = " end" if ended else ""
    reads = " ".join(
        f'"r{i} = " {json.dumps(function)} "(query=\'" wrap {json.dumps(m)}{end} line'
        for i, m in enumerate(metrics, 1)
    )
    lines = [
        f'root ::= "```python\\n" {reads} body "```"',
        "body ::= [^`]*",
        'line ::= [^\\n`]* "\\n"',
        'wrap ::= (("avg" | "min" | "max" | "sum" | "count" | "last") "_over_time(")?',
    ]
    if ended:
        lines.append("end ::= [{\\[)' ]")
    return "\n".join(lines)


def _sql_rules(rule: str, prefixes: list[str]) -> list[str]:
    """GBNF rules for a SQL literal (no ``'``, no fence) whose double-quoted names start with
    none of ``prefixes``: a trie of them, each of its nodes a rule that goes on with any other
    character (free from there), or down the trie, never into a prefix's end."""
    trie: dict[str, Any] = {}
    # a shorter prefix covers longer; sorted in full, so the grammar (a request's cassette
    # key) does not follow the process's string hashing
    for p in sorted({p for p in prefixes if p}, key=lambda p: (len(p), p)):
        node: dict[str, Any] | None = trie
        for ch in p[:-1]:
            node = node.setdefault(ch, {}) if node is not None else None
        if node is not None:
            node[p[-1]] = None  # the prefix's end: not reachable
    out = [f'{rule} ::= ([^\'`"] | "\\"" {rule}n0 "\\"")*']
    count = 0

    def emit(node: dict) -> str:
        nonlocal count
        name = f"{rule}n{count}"
        count += 1
        chars = "".join(sorted(ch for ch in node if ch not in "\\]^-"))
        alts = [f"[^'`\"{chars}] [^'`\"]*"]
        for ch, child in sorted(node.items()):
            if child is not None:
                alts.append(f"{json.dumps(ch)} {emit(child)}")
        # a name may end here (the closing quote follows), or go on off the trie
        out.append(f"{name} ::= ({' | '.join(alts)})?")
        return name

    emit(trie)
    return out


def parse_answer(text: str, stated: tuple[str, float] | None = None) -> TypedAnswer | None:
    """The answer a reply holds (its first JSON object), as a verdict: a measured answer's
    comparison decided here (the text's own, ``stated``, where it states one), or a verdict
    stated outright (a hosted or scripted model)."""
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
            return MeasuredAnswer.model_validate(data).verdict(stated)
        if isinstance(data.get("verdict"), bool):
            data["verdict"] = "true" if data["verdict"] else "false"
        return TypedAnswer.model_validate(data)
    except ValueError:
        return None


def series_values(result):
    """The value of each series of a metric query's result, as floats."""
    out = []
    for series in (result.get("data") or {}).get("result") or []:
        if "value" in series:
            out.append(float(series["value"][1]))
    return out


def table_rows(result):
    """The rows of a table query's result, each a dict of column -> value."""
    columns = result.get("columns") or []
    return [dict(zip(columns, row, strict=False)) for row in result.get("rows") or []]


PRELUDE_FUNCTIONS = (series_values, table_rows)
"""Defined in the sandbox before the model's code runs (``prelude``), as they are here."""
unchecked_series_values, unchecked_table_rows = series_values, table_rows


def checked_series_values(result):
    """``series_values`` that refuses a table query's result (it has no series)."""
    if isinstance(result, dict) and "columns" in result:
        raise TypeError(
            "series_values() reads a metric query's result; this is a table query's result: "
            "read its rows with table_rows()"
        )
    return unchecked_series_values(result)


def checked_table_rows(result):
    """``table_rows`` that refuses a metric query's result (it has no rows)."""
    if isinstance(result, dict) and "data" in result and "columns" not in result:
        raise TypeError(
            "table_rows() reads a table query's result; this is a metric query's result: "
            "read its numbers with series_values()"
        )
    return unchecked_table_rows(result)


CHECKED = (
    "unchecked_series_values, unchecked_table_rows = series_values, table_rows\n"
    + "".join(inspect.getsource(f) for f in (checked_series_values, checked_table_rows))
    + "series_values, table_rows = checked_series_values, checked_table_rows\n"
)
"""From level 4 of ``codeact_constrained``: a helper given the other kind of result raises
instead of returning nothing. Measured (alarms 133-156): ``table_rows`` of a metric result
returned ``[]`` in four runs of a throughput check; the code printed "No data available" and
the model answered a number printed nowhere."""


# read once, at import: a source file edited while a long run goes on does not change it
HELPERS = [inspect.getsource(f) for f in PRELUDE_FUNCTIONS]


def prelude(now: str, checked: bool = False) -> str:
    """The code the sandbox runs before the model's: ``NOW`` and the result helpers
    (``checked``: helpers that refuse the other kind of result, ``CHECKED``)."""
    return "\n".join([f"NOW = {now!r}", *HELPERS]) + "\n" + (CHECKED if checked else "")


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
    site: str = "",
    timestamp: str = "",
    alarm: dict[str, Any] | None = None,
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
        "site": site or "unknown",
        "timestamp": timestamp or "unknown",
        "alarm": _compact(alarm),
        "params": _compact(params),
        "parents": _compact(parents),
        "data": ", ".join(data or []) or "none",
        "functions": render_functions(functions),
        "imports": ", ".join(imports),
        "max_turns": str(max_turns),
        "demos": render_demos(demos or [], timestamp),
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


def render_answer_turn(
    stdout: str, error: str | None, last: bool, stated: tuple[str, float] | None = None
) -> str:
    """The observation of a step that read data, followed by the request for the typed answer
    (with the comparison the check's text states, when it states one)."""
    parts = _output(stdout, error)
    note = f" The check is: observed {stated[0]} {stated[1]:g}." if stated else ""
    parts.append((LAST_TURN + " " if last else "") + ANSWER_NOW + note)
    return "\n\n".join(parts)
