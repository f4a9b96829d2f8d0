"""The CodeAct sub-agent: a model writes Python that queries MCP in the sandbox until it answers.

The loop is a small LangGraph (``think`` -> ``act`` -> ``think`` ...): ``think`` calls the model,
``act`` runs its ```python block in the sandbox with the node's allowed MCP tools as plain
functions ``<server>_<tool>`` (and ``NOW``, the input's time, with two result helpers: the
``prelude``), and the output (or the error) goes back to the model.

It looks before it answers: the prompt shows how the library's nearest other nodes read their
data on this input (``nodes/codeact_demos``); an answer before any function was called is sent
back once. Once a step has read data without an error, the next reply is the typed answer
(``prompts.codeact.MeasuredAnswer``: the value measured, the check's comparison and threshold,
one sentence), which a local model decodes under its JSON schema and from which the host
decides the verdict; where the check's text states its comparison ("more than 5%") the host
takes it from the text, and the schema fixes it. On the last reply the answer is forced the
same way; code identical to an earlier step's is not run again, and the answer is then due. A local model's code
replies are constrained too: a ```python block whose first statement calls one of the functions. It stops on the
answer, on the turn budget, or on two replies with neither code nor an answer. A free-text
``ANSWER:`` (a hosted model, a scripted one) still becomes a Verdict through
``prompts.verdict.VerdictExtractor``. Every turn, token, code block and MCP call is kept in
``Outcome.detail``: the trace the tool-making pipeline consumes.

Example:
    >>> executor = CodeActExecutor(model=chat_model(Settings()))
    >>> outcome = await executor.decide(node, ctx)
    >>> outcome.verdict.value, outcome.detail["turns"]
    ('true', 2)
"""

from __future__ import annotations

import ast
import asyncio
import contextvars
import json
import operator
import re
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, TypedDict

import dspy
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from sopgraph.graphs.executors import Outcome, ToolContext, Unavailable
from sopgraph.graphs.model import Node, Verdict
from sopgraph.graphs.telemetry import agent_span, chat_span, record_usage
from sopgraph.graphs.untrusted_text import serialisable
from sopgraph.nodes.codeact_demos import DEFAULT_DEMOS, LibraryDemos
from sopgraph.nodes.codeact_grounding import (
    PRINT_VALUE,
    UNPRINTED,
    VALUE_CAPTURE,
    ground,
    hold_observed,
    hold_value,
    no_record,
    printed_numbers,
    split_value,
    states_percent,
    unmeasured,
    unprinted,
    value_assignments,
)
from sopgraph.nodes.codeact_scope import (
    Scope,
    check_scope,
    hold_count,
    scope_problem,
    share_problem,
)
from sopgraph.nodes.codeact_window import (
    SQL,
    bound_moment,
    bound_window,
    check_extreme,
    check_window,
    hold_extreme,
    hold_moment,
    hold_window,
    open_window,
    parse_time,
    parsed,
    reads_window,
    states_moment,
    time_problem,
)
from sopgraph.nodes.local_turns import is_local, model_turn
from sopgraph.nodes.mcp_functions import McpFunctions
from sopgraph.nodes.sandbox import SandboxLimits, SandboxUnavailable, ToolFn, run_code
from sopgraph.prompts.codeact import (
    ANSWER_SCHEMA,
    LOOK_FIRST,
    NUDGE_FORMAT,
    REPEATED_CODE,
    SENT_BACK,
    DemoRun,
    FunctionSpec,
    TypedAnswer,
    answer_schema,
    code_grammar,
    implied_comparison,
    parse_answer,
    prelude,
    render_answer_turn,
    render_observation,
    render_system_prompt,
    stated_comparison,
)
from sopgraph.prompts.envelope import role_chat
from sopgraph.prompts.verdict import ExtractionError, VerdictExtractor

DEFAULT_MAX_TURNS = 6
NO_MODEL = "no model configured for the CodeAct sub-agent: set SOPGRAPH_MODEL (e.g. `local`, `ollama:<name>`)"
OBSERVATION_CHARS = (
    2000  # printed output shown back per turn: the local model reads ~20-46 tokens/s
)
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


def node_params(node: Node, params: dict[str, Any]) -> dict[str, Any]:
    """The site parameters the node's text names (``{name}``): a site has dozens, and every
    token of the prompt costs the local model about 1/40 s to read."""
    named = set(re.findall(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", node.text or ""))
    return {k: v for k, v in params.items() if k in named} if named else {}


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


# -- the loop as a LangGraph ----------------------------------------------------------------


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
    stated: tuple[str, float] | None = None  # the comparison the check's text states
    avoid: float | None = None  # the check's own threshold, which its code must not hold
    # the check's data hints (``server.metric``, ``server.table.column``)
    hints: tuple[str, ...] = ()
    samples: int = 0  # other code replies sampled when ``review`` finds a problem in one
    scope: Scope | None = None  # what the check's text is about (``nodes.codeact_scope``)
    station: str | None = None  # the input's station, which a station check's code names
    percent: bool = False  # the check's text states its threshold as a percentage
    grounded: bool = False  # the answer held to what the code printed (``codeact_grounding``)
    # the times the check's text states (``codeact_window``), held when ``constrained``: the
    # setting's level (``Settings.codeact_constrained``: 0 to 5)
    constrained: int = 0
    now: datetime | None = None  # the input's time
    window: int | None = None  # seconds of the window ending at ``now`` the text states
    counted: bool = False  # the code must read that window itself (not an age: "within")
    moment: bool = False  # the text is about the alarm's moment
    extreme: str | None = None  # the reading a bound on every reading holds (``max``, ``min``)
    # the SQL servers' catalogs (server -> table -> columns), read from level 4
    catalog: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    text: str = ""  # the check's text, its parameters filled in


def hinted_names(hints: tuple[str, ...] | list[str]) -> list[str]:
    """The names a query of the hinted data writes: a hint's parts after its server
    (``ops.maintenance_log.performed_at``: ``maintenance_log``, ``performed_at``)."""
    names: list[str] = []
    for hint in hints:
        for part in hint.split(".")[1:]:
            if part and part not in names:
                names.append(part)
    return names


def _numbers(tree: ast.AST) -> set[float]:
    return {float(n.value) for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, int | float) and not isinstance(n.value, bool)}  # fmt: skip


def _reads_called(tree: ast.AST, run: CodeActRun) -> bool:
    """Whether the code calls one of the functions that read data (not the catalog)."""
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)
              and isinstance(n.func, ast.Name) and n.func.id in run.functions}  # fmt: skip
    return any(reads_data(run.specs[f].tool if f in run.specs else f) for f in called)


def _mentions(code: str, name: str) -> bool:
    """Whether ``code`` names every word of ``name``: a hint names a family of columns too
    (``belt_fill``: ``belt_nw_fill_ratio``)."""
    low = code.lower()
    return all(word in low for word in name.lower().split("_") if word)


def threshold_to_avoid(stated: tuple[str, float] | None, text: str) -> float | None:
    """The number a check's code must not hold: the threshold its text states (the code
    measures; the host compares). None when the text states none, when it is 0 or 1, or when
    the text names it twice (``at least 3 stations each above 3%``: also a cut inside the
    measurement)."""
    if stated is None or stated[1] in (0.0, 1.0):
        return None
    named = re.findall(rf"(?<![\d.]){re.escape(f'{stated[1]:g}')}(?![\d])", text)
    return stated[1] if len(named) < 2 else None


def review(code: str, run: CodeActRun) -> str | None:
    """Why ``code`` should not run as it is (another reply is sampled), or None. Three checks
    the host makes from the SOP itself: code that reads data must read at least one of the
    check's hinted data (a look at the catalog is free), over the scope the check's text
    states (``codeact_scope.scope_problem``: the alarmed station, or every station of the
    site), and it must not hold ``run.avoid`` (``threshold_to_avoid``). Code that does not
    parse runs, and its error goes back."""
    tree = parsed(code)
    if tree is None:
        return None
    names = hinted_names(run.hints)
    reads = _reads_called(tree, run)
    if names and reads and not any(_mentions(code, n) for n in names):
        return f"reads none of the check's data ({', '.join(names)})"
    unread = unread_metrics(code, run) if run.constrained >= 4 and reads else None
    if unread is None and run.constrained >= 4 and reads:
        unread = unread_reference(code, run.text)
    if unread is not None:
        return unread
    scoped = (scope_problem(code, run.scope, run.station, devices=run.constrained >= 5)
              if reads else None)  # fmt: skip
    if scoped is None and run.constrained == 3 and run.scope == "spread" and reads:
        scoped = share_problem(code)  # from level 4 the host makes it the count (hold_count)
    if scoped is not None:
        return scoped
    misplaced = sql_misplaced(tree, run) if run.grounded else None
    if misplaced is None and run.constrained >= 2:
        misplaced = sql_placeholders(tree, run)
    if misplaced is not None:
        return misplaced
    timed = (time_problem(code, run.now, run.window if run.counted else None, run.moment)
             if run.constrained and run.now and reads else None)  # fmt: skip
    if timed is None and run.constrained >= 2 and run.now and run.counted and reads:
        timed = open_window(code, run.now)
    if timed is not None:
        return timed
    used = _value_part(tree) if run.constrained >= 2 else tree
    if run.avoid is not None and run.constrained >= 4 and not computes_with(used, run.avoid):
        return None
    if run.avoid is not None and run.avoid in _numbers(used):
        op = run.stated[0] if run.stated else "?"
        return f"uses the check's threshold {run.avoid:g} (the host compares: observed {op} {run.avoid:g})"
    return None


def unread_metrics(code: str, run: CodeActRun) -> str | None:
    """Why ``code`` reads only some of the metrics its check's data names for one function
    (from level 4), or None: the check's value needs each (an error rate: errors and
    attempts). Measured (alarms 133-156): "the pick error rate is above 4.5%" read
    ``pick_errors`` alone and divided it by the threshold, 133%, in every sample."""
    for names in hinted_metrics(run.specs, list(run.hints)).values():
        read = [n for n in names if n in code]
        if read and len(read) < len(names):
            missing = [n for n in names if n not in read]
            return (f"reads {', '.join(read)} but not {', '.join(missing)}: the check's value "
                    f"needs each of its data ({', '.join(names)})")  # fmt: skip
    return None


# "below 80% of the planned headcount": a share of a reference the data holds beside the count
_REFERENCE = re.compile(r"%\s+of\s+(?:the\s+|its\s+)?(planned|rated)\s+(\w+)", re.I)


def unread_reference(code: str, text: str) -> str | None:
    """Why ``code`` for a share of a planned or rated quantity ("below 80% of the planned
    headcount") reads no such quantity, or None (from level 4): it names nothing with
    ``plan`` or ``rated`` in it, nor a ratio (data already relative to plan). Measured
    (alarms 133-156): pack-out staffing read the headcount present alone, 4, "below 80"."""
    match = _REFERENCE.search(text or "")
    if match is None:
        return None
    stem = "plan" if match.group(1).lower() == "planned" else "rated"
    if re.search(rf"{stem}|ratio", code, re.I):
        return None
    what = f"{match.group(1)} {match.group(2)}"
    return (f"reads no {what}: the check is a share of the {what}, so read it too "
            f"(a name with '{stem}' in it) and divide")  # fmt: skip


def computes_with(tree: ast.AST, number: float) -> bool:
    """Whether ``tree`` computes with ``number`` (itself or a name set to it), not only
    compares a result with it in an ``if`` (a verdict the host does not need, but that is
    harmless: the host asks for the value). From level 4: measured (a dev run on alarm
    ALM-001422), ``if idle_pct > threshold`` had three samples drawn, all the same code."""
    names = {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) and _is_number(n.value, number)
             for t in n.targets if isinstance(t, ast.Name)}  # fmt: skip
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        used = _is_number(node, number) or (isinstance(node, ast.Name) and node.id in names
                                            and isinstance(node.ctx, ast.Load))  # fmt: skip
        if not used:
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Assign) and node is parent.value:
            continue  # ``threshold = 25``: its uses decide
        grand = parents.get(parent) if parent is not None else None
        if (
            isinstance(parent, ast.Compare)
            and isinstance(grand, ast.If | ast.IfExp)
            and grand.test is parent
        ):
            continue
        return True
    return False


def _is_number(node: ast.AST, number: float) -> bool:
    return (isinstance(node, ast.Constant) and isinstance(node.value, int | float)
            and not isinstance(node.value, bool) and float(node.value) == number)  # fmt: skip


def _value_part(tree: ast.AST) -> ast.AST:
    """The statements up to the code's last top-level ``value = ...`` (all of it when there
    is none): what a threshold is looked for in. Measured: a sample whose SQL and value were
    right was sent back for ``threshold = 10``, set after the value for a sentence."""
    body = getattr(tree, "body", [])
    at = value_assignments(body, augmented=False)
    return ast.Module(body=body[: at[-1] + 1], type_ignores=[]) if at else tree


def _strings(node: ast.AST) -> str:
    """The literal text of an argument: its string constants and f-string parts."""
    return " ".join(n.value for n in ast.walk(node)
                    if isinstance(n, ast.Constant) and isinstance(n.value, str))  # fmt: skip


def sql_misplaced(tree: ast.AST, run: CodeActRun) -> str | None:
    """Why ``tree`` sends SQL to a function that takes none, or None: a call of a function
    whose parameters name no ``sql`` (a metrics server's PromQL ``query``) with a
    ``SELECT ... FROM`` in its arguments. Measured: the model queried the metrics server with
    SQL on a table it does not have, repeated it, then answered a number from nothing."""
    assigned = {t.id: _strings(n.value) for n in ast.walk(tree) if isinstance(n, ast.Assign)
                for t in n.targets if isinstance(t, ast.Name)}  # fmt: skip
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
            continue
        spec = run.specs.get(call.func.id)
        props = _params(spec)
        if not props or _takes_sql(spec):
            continue
        args = [*call.args, *(k.value for k in call.keywords)]
        texts = [assigned.get(a.id, "") if isinstance(a, ast.Name) else _strings(a) for a in args]
        if any(SQL.search(t) for t in texts):
            return f"sends SQL to {call.func.id}, which takes no SQL (its parameters: {', '.join(props)})"
    return None


def sql_placeholders(tree: ast.AST, run: CodeActRun) -> str | None:
    """Why a SQL call's placeholders do not fit its parameters, or None: a call of a function
    that takes SQL whose ``sql`` literal holds a number of ``?`` other than the length of its
    ``params`` list literal. Measured: the model dropped a window's upper bound from the SQL
    and kept its parameter, and after the server's error dropped the parameter too, reading
    every row after the window's start."""
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
            continue
        if not _takes_sql(run.specs.get(call.func.id)):
            continue
        args = {k.arg: k.value for k in call.keywords}
        sql, params = args.get("sql"), args.get("params")
        if not (isinstance(sql, ast.Constant) and isinstance(sql.value, str)):
            continue
        if not isinstance(params, ast.List | ast.Tuple):
            continue
        marks = sql.value.count("?")
        if marks != len(params.elts):
            return (f"its SQL has {marks} placeholders (?) but {len(params.elts)} params: "
                    "one value for each ?, in order")  # fmt: skip
    return None


def _params(spec: FunctionSpec | None) -> dict[str, Any]:
    return (spec.input_schema.get("properties") or {}) if spec else {}


def _takes_sql(spec: FunctionSpec | None) -> bool:
    """Whether a function's parameters name ``sql`` (a PromQL server's do not)."""
    return any("sql" in name for name in _params(spec))


def reads_data(tool: str | None) -> bool:
    """A call that reads data, not the catalog: after one succeeds the answer is due."""
    name = tool or ""
    return not name.startswith("list_") and "metadata" not in name


def code_reply_model(
    model: BaseChatModel,
    functions: list[str],
    metrics: dict[str, list[str]] | None = None,
    ended: bool = True,
    blocked: dict[str, list[str]] | None = None,
    allowed: dict[str, list[str]] | None = None,
    every: bool = False,
) -> BaseChatModel | None:
    """``model`` constrained to a code block that starts by calling one of ``functions``
    (``prompts.codeact.code_grammar``; a PromQL function of ``metrics`` by querying one of
    its hinted metrics, a SQL function of ``blocked`` with SQL that names no data of the
    demonstrations that is not the check's, one of ``allowed`` with SQL that quotes only
    those names; with ``every``, a query of each of a function's hinted metrics first) on the
    local llama.cpp server; None elsewhere."""
    if not functions or not is_local(model):
        return None
    grammar = code_grammar(functions, metrics, ended, blocked, allowed, every)
    return model.bind(extra_body={"grammar": grammar})  # type: ignore[return-value]


def hinted_metrics(specs: dict[str, FunctionSpec], hints: list[str]) -> dict[str, list[str]]:
    """The check's hinted metrics by the PromQL function that queries them: a function whose
    parameters name a ``query`` and no ``sql``, and each ``<its server>.<metric>`` hint."""
    out: dict[str, list[str]] = {}
    for name, spec in specs.items():
        if "query" not in _params(spec) or _takes_sql(spec):
            continue
        names = [h.split(".")[1] for h in hints
                 if h.count(".") == 1 and h.split(".")[0] == spec.server]  # fmt: skip
        if names:
            out[name] = names
    return out


_QUOTED = re.compile(r'"([A-Za-z_][A-Za-z0-9_]*)"')


def blocked_prefixes(
    specs: dict[str, FunctionSpec], hints: list[str], demos: list[DemoRun]
) -> dict[str, list[str]]:
    """What a SQL function's first query may not name (``code_grammar``'s ``blocked``): the
    data of the demonstrations that is not the check's, each as its shortest prefix that
    starts no name the check may want (its hinted names, and the other names the
    demonstrations' SQL quotes: ``site``, ``five_minute_interval``, the table)."""
    own = set(hinted_names(hints))
    theirs = {n for d in demos for n in hinted_names(d.data)} - own
    quoted = {n for d in demos for c in d.calls for v in c.args.values() if isinstance(v, str)
              for n in _QUOTED.findall(v)}  # fmt: skip
    allowed = own | (quoted - theirs)
    prefixes = []
    for name in sorted(theirs):
        for i in range(1, len(name) + 1):
            if not any(a.startswith(name[:i]) for a in allowed):
                prefixes.append(name[:i])
                break
    if not prefixes:
        return {}
    return {name: prefixes for name, spec in specs.items() if _takes_sql(spec)}


def allowed_names(
    specs: dict[str, FunctionSpec],
    hints: list[str],
    demos: list[DemoRun],
    tables: dict[str, dict[str, list[str]]],
    others: list[str] | None = None,
    lookup: str | None = None,
) -> dict[str, list[str]]:
    """What a SQL function's first query may quote (``code_grammar``'s ``allowed``, from
    level 4): the tables of its server (``tables``: server -> table -> columns) that hold the
    check's hinted data and their columns. A table the check names as its data gives every
    column; a table chosen for a hinted column (one that names every word of the hint) gives
    its columns less the demonstrations' data that is not the check's and less the columns
    ``others`` name (the ``server.column`` hints of the SOP's other nodes: another quantity
    of the same table). A function whose server holds no hinted name is left out. Measured
    (a dev run on alarm ALM-001425): "upstream conveyance recorded at least 3 jams" read
    ``sorter_throughput_ratio``, a column of the same table, in its reply and all samples.
    With ``lookup`` (a column name, ``station``; from level 5, for a station check), the
    tables holding that column are allowed too, with their columns: where the check's device
    is looked up by its station. Measured (alarm ALM-001473, level 4): the demonstrations'
    first query looks the robot up in ``stations``, which the grammar left out, and the model
    wrote ``FROM "equipment_id"`` (no such table) in its reply and every sample."""
    own = hinted_names(hints)
    theirs = [n for d in demos for n in hinted_names(d.data) if n not in own]
    theirs += [h.split(".")[1] for h in others or [] if h.count(".") == 1
               and h.split(".")[1] not in own]  # fmt: skip
    out: dict[str, list[str]] = {}
    for name, spec in specs.items():
        if not _takes_sql(spec):
            continue
        catalog = tables.get(spec.server, {})
        names = hinted_names([h for h in hints if h.split(".")[0] == spec.server])
        whole = [n for n in names if n in catalog]  # tables the check names
        named = [n for n in names if n not in catalog]  # columns (a table hint names itself)
        chosen = {t: cols for t, cols in catalog.items()
                  if t in whole or any(_mentions(c, n) for c in cols for n in named)}  # fmt: skip
        allowed = set(chosen)
        for table, cols in chosen.items():
            allowed |= {c for c in cols if table in whole or any(_mentions(c, n) for n in named)
                        or not any(_mentions(c, t) for t in theirs)}  # fmt: skip
        for table, cols in catalog.items() if chosen and lookup else ():
            if lookup in cols:
                allowed |= {table, *cols}
        if chosen:
            out[name] = sorted(allowed)
    return out


def hold_code(run: CodeActRun, text: str) -> tuple[str, list[str]]:
    """``text`` with the code it holds kept to the window the check's text states
    (``codeact_window.hold_window``; from level 4 a window's missing end given back first,
    ``bound_window``), a moment check's times held to the moment (from level 5,
    ``hold_moment`` and ``bound_moment``) and, from level 2 of ``constrained`` with ``grounded``,
    its value printed where it is computed (``codeact_grounding.hold_value``); a note for each
    change."""
    code = extract_code(text) if run.constrained else None
    if not code:
        return text, []
    held, notes = code, []
    sql = {name for name, spec in run.specs.items() if _takes_sql(spec)}
    if run.constrained >= 4 and run.now and run.window:
        held, notes = bound_window(held, sql, run.now)
    if run.now and run.window:
        held, more = hold_window(held, run.now, run.window)
        notes = [*notes, *more]
    if run.constrained >= 5 and run.now and run.moment and not run.window:
        held, more = hold_moment(held, run.now)
        columns = {c for cat in run.catalog.values() for cols in cat.values() for c in cols}
        held, most = bound_moment(held, sql, columns if run.catalog else None)
        notes = [*notes, *more, *most]
    if run.constrained >= 2 and run.grounded:
        held, more = hold_value(held)
        notes = [*notes, *more]
    if run.constrained >= 3 and run.extreme:
        held, more = hold_extreme(held, run.extreme)
        notes = [*notes, *more]
    if run.constrained >= 4 and run.scope == "spread":
        held, more = hold_count(held)
        notes = [*notes, *more]
    return (text.replace(code, held, 1), notes) if notes else (text, [])


def typed_answer_model(
    model: BaseChatModel, schema: dict[str, Any] | None = None
) -> BaseChatModel | None:
    """``model`` constrained to ``MeasuredAnswer`` where the endpoint decodes under a JSON schema
    (the local llama.cpp server: ``response_format`` with a ``schema``); None elsewhere (the
    answer is then asked for in words and parsed)."""
    if not is_local(model):
        return None
    fmt = {"type": "json_object", "schema": schema or ANSWER_SCHEMA}
    return model.bind(extra_body={"response_format": fmt})  # type: ignore[return-value]


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
    answer: str | None
    typed: dict[str, Any] | None
    stop: str | None
    looked: bool  # a function was called (successfully or not)
    answer_due: bool  # the last step read data: the next reply is the typed answer
    unlooked: int  # answers sent back for being given before any function was called
    resampled: Annotated[list[dict[str, Any]], operator.add]  # code replies ``review`` sent back
    prepared: dict[str, Any] | None  # what the chosen sample ran (``_execute``), for ``act``
    repeats: int  # code replies identical to an earlier step's (each not run again)
    resample: bool  # the last reply repeated earlier code: the next code reply is sampled
    asked_value: bool  # a step read data and printed no number: the value was asked for
    asked_printed: bool  # an answer's observed was printed nowhere: code was asked for (level 4)
    grounded: list[str]  # how the host changed the answer's observed value (``ground``)
    held: Annotated[list[str], operator.add]  # how the host held the code's times to the check's


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


def _last_line(error: str) -> str:
    """The exception line of a traceback (not the sandbox's ``(error: ...)`` note)."""
    lines = [x for x in error.splitlines() if x.strip() and not x.startswith("(")]
    return lines[-1].strip() if lines else error.strip()


async def _resample(
    run: CodeActRun,
    model: Any,
    messages: list[BaseMessage],
    problem: str,
    turn: int,
    first: str = "",
) -> tuple[str | None, dict[str, Any] | None, int, int, dict[str, Any]]:
    """Code that ``review`` found a problem in is not run as it is: up to ``run.samples``
    other replies are sampled (temperature, a seed each: the same requests replay), and the
    first whose code passes the review, runs without an error and reads data is chosen, with
    what it ran (``_execute``). (None, None, ...) when none does: the first reply then runs.
    Only the chosen code's calls reach the trace; a sample that failed is in ``resampled``.
    From level 3 of ``run.constrained`` the samples see the ``first`` reply and the problem
    (``SENT_BACK``). Measured before: the three samples of an upstream-jam check all copied
    the sorter-jam demonstration the first reply had copied."""
    record: dict[str, Any] = {"turn": turn, "problems": [problem], "chosen": None}
    n_in = n_out = 0
    if run.constrained >= 3 and first:
        messages = [*messages, AIMessage(content=first),
                    HumanMessage(content=SENT_BACK.format(problem=problem))]  # fmt: skip
    for seed in range(1, run.samples + 1):
        try:
            text, i, o = await _ask(run, model.bind(temperature=SAMPLE_TEMPERATURE, seed=seed),
                                    messages)  # fmt: skip
        except Exception:  # noqa: BLE001 - a failed sample is one fewer candidate
            break
        n_in, n_out = n_in + i, n_out + o
        text, _ = hold_code(run, text)
        code = extract_code(text)
        found = "no code block" if code is None else review(code, run)
        if code is not None and found is None:
            try:
                ran = await _execute(run, code, turn)
            except SandboxUnavailable:
                break
            usable = ran["step"]["ok"] and ran["read"]
            if usable and (not run.grounded or printed_numbers(ran["shown"])):
                return text, ran, n_in, n_out, {**record, "chosen": seed, "samples": seed}
            found = (
                "printed no number"
                if usable
                else "failed: " + _last_line(ran["step"]["error"] or "it read no data")
            )
        record["problems"].append(found)
    return None, None, n_in, n_out, {**record, "samples": len(record["problems"]) - 1}


async def think(state: CodeActState, runtime: Runtime[CodeActRun]) -> dict[str, Any]:
    run = runtime.context
    turns = state.get("turns", 0) + 1
    answering = state.get("answer_due", False) or (
        turns >= run.max_turns and state.get("looked", False)
    )
    model = (run.answer_model if answering else run.code_model) or run.model
    if state.get("resample") and not answering:
        # the greedy reply to this prompt is the code already run: sample another (a seed per
        # repeat, so a recording replays)
        model = model.bind(temperature=SAMPLE_TEMPERATURE, seed=state.get("repeats", 1))
    try:
        text, n_in, n_out = await _ask(run, model, state["messages"])
        resampled, held = [], []
        if not answering:
            text, held = hold_code(run, text)
        code = None if answering else extract_code(text)
        # once every sample of a turn failed the review, later turns run their reply as it is
        # (measured: a node whose samples all failed on six turns spent 76k tokens)
        spent = run.grounded and any(r["chosen"] is None for r in state.get("resampled", []))
        problem = review(code, run) if code is not None and run.samples and not spent else None
        prepared = None
        if problem is not None:
            found = await _resample(run, model, state["messages"], problem, turns, text)
            other, prepared, i, o, record = found
            n_in, n_out, resampled = n_in + i, n_out + o, [record]
            text = other or text
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
        "resampled": resampled,
        "prepared": None if answering else prepared,
    }
    if held:
        update["held"] = held
    read = text
    if answering and run.grounded:  # the answer held to what the code printed
        steps = state.get("code", [])
        last = steps[-1]["stdout"] if steps else ""
        code = "\n".join(step["code"] for step in steps)
        held, notes = text, []
        if run.constrained >= 4 and steps and steps[-1].get("value") is not None:
            held, notes = hold_observed(text, steps[-1]["value"])
        read, more = ground(held, last, code, run.percent)
        notes = [*notes, *more]
        if run.constrained and run.window and not run.counted:  # an age: none on record is old
            read, more = no_record(read, last)
            notes = [*notes, *more]
        update["grounded"] = notes
        # what every step printed, and the value each ended with (level 4's capture)
        everything = "\n".join(f"{step['stdout'] or ''}\n{step.get('value', '')}" for step in steps)
        nowhere = unprinted(read, everything) if run.constrained >= 4 else None
        if nowhere is not None and not state.get("asked_printed") and turns < run.max_turns - 1:
            # the answer reports what the code printed: code that prints it, once
            update["asked_printed"] = True
            update["messages"].append(HumanMessage(content=UNPRINTED.format(observed=nowhere)))
            return update
        if nowhere is not None and state.get("asked_printed"):  # again: no value was measured
            read, more = unmeasured(read)
            update["grounded"] = [*notes, *more]
    typed = parse_answer(read, run.stated) if answering else None
    code = None if typed is not None else extract_code(text)
    final = typed is not None or (code is None and is_final_answer(text))
    if final and not state.get("looked", False) and run.functions:
        # it must look before it answers: the answer goes back, once
        if state.get("unlooked", 0) >= 1 or turns >= run.max_turns:
            update["stop"] = "the model answered without calling any function to read the data"
        else:
            update["unlooked"] = state.get("unlooked", 0) + 1
            update["messages"].append(HumanMessage(content=LOOK_FIRST))
        return update
    if typed is not None:
        update["answer"] = text.strip()
        update["typed"] = typed.model_dump()
    elif code is not None and turns < run.max_turns:
        update["pending"] = code
    elif code is not None:  # code on the last reply could never be followed by an answer
        update["stop"] = _budget(turns)
    elif final:
        update["answer"] = text.strip()
    elif state.get("garbage", 0) >= 1:
        shown = " ".join(text.split())[:160] or "(empty)"
        update["stop"] = f"the model answered twice with neither code nor ANSWER/VERDICT: {shown!r}"
    elif turns >= run.max_turns:
        update["stop"] = _budget(turns)
    else:
        update["garbage"] = state.get("garbage", 0) + 1
        update["messages"].append(HumanMessage(content=NUDGE_FORMAT))
    return update


async def act(state: CodeActState, runtime: Runtime[CodeActRun]) -> dict[str, Any]:
    run = runtime.context
    code, turn = state.get("pending") or "", state.get("turns", 0)
    if any(step["code"] == code for step in state.get("code", [])):
        # the same code again would fail (or print) the same: not run; the answer is due
        looked = state.get("looked", False)
        text = _observe(run, turn, REPEATED_CODE, None, answer=looked)
        return {"pending": None, "answer_due": looked, "messages": [HumanMessage(content=text)],
                "repeats": state.get("repeats", 0) + 1, "resample": True}  # fmt: skip
    prepared = state.get("prepared")
    try:  # a sample verified in ``think`` has already run: its result is used
        ran = prepared if prepared and prepared["step"]["code"] == code else None
        ran = ran or await _execute(run, code, turn)
    except SandboxUnavailable as exc:
        return {"pending": None, "stop": f"sandbox unavailable: {exc}"}
    due = ran["step"]["ok"] and ran["read"]
    looked = state.get("looked", False) or bool(ran["calls"])
    last = looked and run.max_turns - turn <= 1
    ask = (due and not last and run.grounded and not state.get("asked_value")
           and not printed_numbers(ran["shown"]))  # fmt: skip
    observation = _observe(run, turn, ran["shown"], ran["step"]["error"], (due or last) and not ask)
    if ask:  # it read data and printed no number (a verdict): the value, once, then the answer
        observation += "\n\n" + PRINT_VALUE
    return {
        "asked_value": bool(state.get("asked_value") or ask),
        "pending": None,
        "prepared": None,
        "resample": False,
        "code": [ran["step"]],
        "mcp_calls": ran["calls"],
        "looked": looked,
        "answer_due": due and not ask,
        "messages": [HumanMessage(content=observation)],
    }


_MISSING = re.compile(r"\b(\w+)\.\w+ failed:.*?no such (table|column): ([\w.]+)", re.S)


def catalog_hint(error: str, catalog: dict[str, dict[str, list[str]]]) -> str:
    """A line naming what a SQL server holds, for an ``error`` that names a table or column it
    does not (from level 5; empty when the error is another or the server's catalog is
    unknown). Measured (alarms 157-180, level 4): "no such table: equipment_id" (a column
    queried as a table) went back bare, and the model ran the same query again."""
    found = _MISSING.search(error or "")
    tables = catalog.get(found.group(1), {}) if found else {}
    if not found or not tables:
        return ""
    if found.group(2) == "table":
        return f"\n(the tables of {found.group(1)}: {', '.join(sorted(tables))})"
    name = found.group(3).split(".")[-1]
    holding = [t for t, cols in sorted(tables.items()) if name in cols]
    listed = "; ".join(f"{t}: {', '.join(cols)}" for t, cols in sorted(tables.items()))
    where = f" ({name} is a column of {', '.join(holding)})" if holding else ""
    return f"\n(the columns of {found.group(1)}'s tables{where}: {listed})"


async def _execute(run: CodeActRun, code: str, turn: int) -> dict[str, Any]:
    """Run ``code`` in the sandbox: its trace step, its MCP calls, the output shown back and
    whether a call read data (not the catalog) without an error."""
    capture = VALUE_CAPTURE if run.constrained >= 4 and run.grounded else ""
    result = await run_code(run.prelude + code + capture, run.functions, run.limits)
    stdout, value = split_value(result.stdout) if capture else (result.stdout, None)
    error = None
    if not result.ok:
        error = clean_traceback(result.error) if result.error else None
        if result.reason and (not error or result.reason not in error):
            error = f"{error}\n({result.reason})" if error else result.reason
        if error and run.constrained >= 5:
            error += catalog_hint(error, run.catalog)
    step = {
        "turn": turn,
        "code": code,
        "ok": result.ok,
        "stdout": clip(stdout, TRACE_CHARS),
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
    if value is not None:
        step["value"] = value
    return {"step": step, "calls": calls, "shown": clip(stdout, OBSERVATION_CHARS),
            "read": read}  # fmt: skip


def _observe(run: CodeActRun, turn: int, stdout: str, error: str | None, answer: bool) -> str:
    """What the model is shown after a step: the output, then the request for the typed
    answer when it is due, else the turns left."""
    if answer:
        return render_answer_turn(stdout, error, run.max_turns - turn <= 1, run.stated)
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


# -- the executor ---------------------------------------------------------------------------


@dataclass
class CodeActExecutor:
    """Decides a node by running the CodeAct loop; ``Unavailable`` when no model is configured.

    A loop that ends without a verdict returns an Outcome with ``verdict=None``, the reason in
    ``error`` and the full trace in ``detail`` (tokens spent on a failure still count).
    """

    model: BaseChatModel | None = None
    extractor: VerdictExtractor | None = None
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    max_turns: int = DEFAULT_MAX_TURNS
    name: str = "codeact"
    library: LibraryDemos | None = None  # the SOP's tool library, for demonstrations
    demos: int = DEFAULT_DEMOS
    samples: int | None = None  # other code replies sampled on a review problem (Settings)
    scoped: bool | None = None  # the check's scope read from its text (Settings.codeact_scope)
    grounded: bool | None = None  # the answer held to the output (Settings.codeact_grounded)
    constrained: int | None = None  # the check's metric and times held: 0 to 4 (Settings)
    _functions: McpFunctions = field(default_factory=McpFunctions, repr=False)

    def __post_init__(self) -> None:
        if None in (self.samples, self.scoped, self.grounded, self.constrained):
            from sopgraph.nodes.models import Settings

            settings = Settings()
            self.samples = settings.codeact_samples if self.samples is None else self.samples
            self.scoped = settings.codeact_scope if self.scoped is None else self.scoped
            self.grounded = settings.codeact_grounded if self.grounded is None else self.grounded
            if self.constrained is None:
                self.constrained = settings.codeact_constrained
        self.model = role_chat(self.model, "codeact")
        self.extractor = self.extractor or VerdictExtractor()

    async def decide(self, node: Node, ctx: ToolContext) -> Outcome:
        if self.model is None:
            raise Unavailable(NO_MODEL)
        async with model_turn(self.model):  # the local model: one node's turns at a time
            return await self._decide(node, ctx)

    async def _decide(self, node: Node, ctx: ToolContext) -> Outcome:
        start = time.perf_counter()
        text = ctx.text or node.text  # the check, its parameters filled in
        specs, functions, problems = await self._functions.for_node(node, ctx)
        held = int(self.constrained or 0)
        demos = (
            await self.library.for_node(
                node, ctx, self.demos, scoped=bool(self.scoped), counters=held >= 4
            )  # fmt: skip
            if self.library and specs
            else []
        )
        tables = {spec.server: await self._functions.tables(ctx, spec.server)
                  for spec in specs.values() if held >= 4 and _takes_sql(spec)}  # fmt: skip
        system = render_system_prompt(
            question=text,
            functions=list(specs.values()),
            imports=self.limits.allowed_imports,
            max_turns=self.max_turns,
            site=ctx.site,
            timestamp=ctx.timestamp,
            alarm=ctx.input,
            params=node_params(node, ctx.params),
            parents={k: v.model_dump(exclude={"explanation"}) for k, v in ctx.parents.items()},
            data=node.data,
            demos=demos,
        )
        stated = stated_comparison(text) or (implied_comparison(text) if self.grounded else None)
        scope = check_scope(text) if self.scoped else None
        run = CodeActRun(
            self.model, functions, specs, self.limits, self.max_turns, model_label(self.model),
            answer_model=typed_answer_model(self.model, answer_schema(stated)),
            prelude=prelude(ctx.timestamp, checked=held >= 4), stated=stated, avoid=threshold_to_avoid(stated, text),
            hints=tuple(node.data), samples=self.samples,
            code_model=code_reply_model(self.model, list(specs),
                                        hinted_metrics(specs, node.data) if held else None,
                                        ended=held >= 2,
                                        blocked=blocked_prefixes(specs, node.data, demos)
                                        if held >= 3 else None,
                                        allowed=allowed_names(specs, node.data, demos, tables,
                                                              self._others(node),
                                                              lookup="station" if held >= 5
                                                              and scope == "station" else None)
                                        if held >= 4 else None, every=held >= 4),
            scope=scope, station=_station(ctx.input),
            percent=states_percent(text), grounded=bool(self.grounded), constrained=held,
            now=_now(ctx.timestamp) if held else None, window=check_window(text),
            counted=reads_window(text), moment=states_moment(text),
            extreme=check_extreme(text) if held >= 3 else None, text=text, catalog=tables,
        )  # fmt: skip
        state: CodeActState = {
            "messages": [SystemMessage(content=system), HumanMessage(content=START_MESSAGE)],
            "turns": 0,
            "garbage": 0,
            "input_tokens": 0,
            "output_tokens": 0,
        }
        with agent_span(
            self.name, node.id, "writes Python against MCP to decide an SOP node"
        ) as span:
            final = await _own_run(
                codeact_graph.ainvoke(
                    state, {"recursion_limit": 4 * self.max_turns + 10}, context=run
                )
            )
            threshold = _threshold(node, ctx.params)
            verdict, error, extract = await self._extract(text, final, threshold)
            detail = _trace(final, specs, problems, extract)
            detail["demos"] = [d.node for d in demos]
            record_usage(span, detail["input_tokens"], detail["output_tokens"], model=run.label)
        ms = (time.perf_counter() - start) * 1000
        if verdict is None:
            return Outcome(
                verdict=None, executor=self.name, error=f"codeact: {error}", ms=ms, detail=detail
            )
        return Outcome(verdict=verdict, executor=self.name, ms=ms, detail=detail)

    def _others(self, node: Node) -> list[str]:
        """The data hints of the SOP's other nodes (its library's), for ``allowed_names``."""
        if self.library is None:
            return []
        return [h for e in self.library.pool() if e.node != node.id for h in e.data]

    async def _extract(
        self, question: str, final: CodeActState, threshold: Any = None
    ) -> tuple[Verdict | None, str | None, dict[str, Any]]:
        answer = final.get("answer")
        if not answer:
            return None, final.get("stop") or "the loop ended without an answer", {}
        if final.get("typed"):
            typed = TypedAnswer.model_validate(final["typed"])
            verdict = Verdict(value=typed.verdict, observed=typed.observed,
                              threshold=threshold, explanation=typed.explanation)  # fmt: skip
            return verdict, None, {"source": "typed"}
        with dspy.track_usage() as usage:
            try:
                verdict, source = await self.extractor.averdict(question, answer)
            except ExtractionError as exc:
                return None, str(exc), {"source": "failed"}
        n_in = n_out = 0
        for entry in usage.get_total_tokens().values():
            n_in += int(entry.get("prompt_tokens") or 0)
            n_out += int(entry.get("completion_tokens") or 0)
        return verdict, None, {"source": source, "input_tokens": n_in, "output_tokens": n_out}


def _now(timestamp: Any) -> datetime | None:
    """The input's time, or None when it has none the host can read."""
    try:
        return parse_time(str(timestamp)) if timestamp else None
    except ValueError:
        return None


def _station(data: Any) -> str | None:
    """The input's station, when it names one (a belt alarm does not)."""
    station = data.get("station") if isinstance(data, dict) else None
    return station if isinstance(station, str) and station else None


def _threshold(node: Node, params: dict[str, Any]) -> Any:
    """The threshold of a typed answer: the value of the one site parameter the node names."""
    named = node_params(node, params)
    return next(iter(named.values())) if len(named) == 1 else None


async def _own_run(coro: Any) -> Any:
    """Run the loop as its own graph run, not as a subgraph of the SOP run that called it.

    Inside an SOP node LangGraph would treat it as a subgraph and inherit the run's
    checkpointer settings (a durable run's ``durability="sync"`` then waits on a checkpoint
    a graph compiled with ``checkpointer=False`` never writes). The OpenTelemetry context,
    also a context variable, is kept.
    """
    context = contextvars.copy_context()
    context.run(var_child_runnable_config.set, None)
    return await asyncio.create_task(coro, context=context)


def _trace(
    final: CodeActState,
    specs: dict[str, FunctionSpec],
    problems: list[str],
    extract: dict[str, Any],
) -> dict[str, Any]:
    """The run's trace for the trail: JSON only (it is checkpointed with the run state)."""
    detail: dict[str, Any] = {
        "turns": final.get("turns", 0),
        "input_tokens": final.get("input_tokens", 0) + extract.get("input_tokens", 0),
        "output_tokens": final.get("output_tokens", 0) + extract.get("output_tokens", 0),
        "functions": sorted(specs),
        "code": final.get("code", []),
        "mcp_calls": final.get("mcp_calls", []),
        "replies": [clip(r, TRACE_CHARS) for r in final.get("replies", [])],
        "answer": final.get("answer"),
        "stop": final.get("stop"),
        "extract": extract,
    }
    if final.get("grounded"):
        detail["grounded"] = final["grounded"]
    if final.get("resampled"):
        detail["resampled"] = final["resampled"]
    if final.get("held"):
        detail["held"] = final["held"]
    if problems:
        detail["server_problems"] = problems
    return detail
