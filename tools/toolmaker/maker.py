"""The tool-maker: writes a candidate tool for a node from its brief, traces and feedback.

In the ``spec`` form the model fills a ``ToolSpec`` that is checked against the SOP's
parameters and the MCP catalog, then compiled; a spec that does not check is a candidate with
a ``problem`` (fed back next round) rather than an exception. In the ``code`` form the model
writes the file itself, as in the paper; either way the result only ever runs in the sandbox.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Awaitable
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, TypeVar

import dspy
from pydantic import ValidationError

from sopgraph.prompts.toolmaker import ToolMakerModule
from sopgraph.tools.toolmaker.catalog import Catalog
from sopgraph.tools.toolmaker.context import CONTRACT, NodeBrief, check_text
from sopgraph.tools.toolmaker.record import Candidate
from sopgraph.tools.toolmaker.spec import SpecError, ToolSpec, check_spec, compile_spec

T = TypeVar("T")
_FENCE = re.compile(r"```(?:python|py|sql|promql|json)?[ \t]*\n?(.*?)(?:```|\Z)", re.S | re.I)
_AGGREGATE = {"avg": "mean", "average": "mean", "avg_over_time": "mean", "total": "sum",
              "latest": "last", "maximum": "max", "minimum": "min", "value": "first",
              "none": "first", "": "first"}  # fmt: skip
_OPERATOR = {"gt": ">", "ge": ">=", "lt": "<", "le": "<=", "eq": "==", "ne": "!=", "=": "==",
             "greater than": ">", "less than": "<", "at least": ">=", "at most": "<=",
             "above": ">", "below": "<", "=>": ">=", "=<": "<="}  # fmt: skip


@dataclass
class Usage:
    """Tokens and LLM seconds a stage spent."""

    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens


async def tracked(call: Awaitable[T], lm: dspy.BaseLM | None = None) -> tuple[T, Usage]:
    """Await a DSPy call under ``lm`` and return its result with the tokens it used."""
    with dspy.context(lm=lm) if lm is not None else nullcontext(), dspy.track_usage() as usage:
        result = await call
    return result, usage_of(usage)


def usage_of(tracker: Any) -> Usage:
    """The tokens a ``dspy.track_usage()`` tracker counted, summed over its models."""
    spent = Usage()
    for entry in tracker.get_total_tokens().values():
        spent.input_tokens += int(entry.get("prompt_tokens") or 0)
        spent.output_tokens += int(entry.get("completion_tokens") or 0)
    return spent


def call_failure(exc: BaseException) -> str:
    """One line for a model call that gave nothing usable (unparsable reply, timeout)."""
    first = next((ln for ln in str(exc).splitlines() if ln.strip()), "")
    return f"{type(exc).__name__}: {first[:300]}"


def unfence(text: str) -> str:
    """The content of the first fenced block, or the text itself without stray backticks."""
    blocks = [b for b in _FENCE.findall(text or "") if b.strip()]
    return (blocks[0] if blocks else (text or "")).strip().strip("`").strip()


def _field(pred: Any, name: str) -> str:
    # A small model sometimes writes HTML entities (&gt; &#39;) for the characters it means.
    return html.unescape(str(getattr(pred, name, "") or ""))


def spec_from(pred: Any) -> ToolSpec:
    """A ToolSpec from the model's fields, forgiving synonyms (``avg``, ``greater than``)."""
    aggregate = _field(pred, "aggregate").strip().strip("`'\"").lower()
    operator = _field(pred, "operator").strip().strip("`'\"").lower()
    empty = (_field(pred, "empty") or "no_data").strip().strip("`'\"").lower()
    empty = {"nodata": "no_data", "no data": "no_data", "none": "no_data", "": "no_data"}.get(
        empty, empty
    )
    try:
        return ToolSpec(
            server=_field(pred, "server"),
            tool="execute_query",
            query=unfence(_field(pred, "query")),
            column=(_field(pred, "column").split() or [""])[0],
            aggregate=_AGGREGATE.get(aggregate, aggregate),
            operator=_OPERATOR.get(operator, operator),
            threshold=_field(pred, "threshold").strip().strip("{}"),
            empty=empty,
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        raise SpecError(f"{'.'.join(map(str, err['loc']))}: {err['msg']}") from None


@dataclass
class ToolMaker:
    """Writes candidates for one node.

    Args:
        form: ``spec`` (fill a ToolSpec, compiled) or ``code`` (write the file).
        lm: the DSPy LM; default ``dspy.settings.lm``.
        example: a tool of ANOTHER node shown as a format example (code form only).
    """

    form: str = "spec"
    lm: dspy.BaseLM | None = None
    example: str = ""
    module: ToolMakerModule = field(init=False)

    def __post_init__(self) -> None:
        self.module = ToolMakerModule(self.form)

    def inputs(self, brief: NodeBrief, evidence: str, feedback: str) -> dict[str, str]:
        """Every text the model receives (the prompt-hygiene test reads these)."""
        return {
            "check": check_text(brief),
            "graph": brief.graph,
            "parameters": brief.parameters,
            "servers": brief.servers,
            "contract": CONTRACT,
            "example": self.example or "none",
            "evidence": evidence,
            "feedback": feedback,
        }

    async def write(
        self, brief: NodeBrief, catalog: Catalog, evidence: str, feedback: str, variant: int = 0
    ) -> tuple[Candidate, Usage]:
        """One candidate; ``variant`` > 0 samples an independent one (label-free voting)."""
        config = {"temperature": 0.8, "rollout_id": variant} if variant else {}
        try:
            pred, usage = await tracked(
                self.module.acall(config=config, **self.inputs(brief, evidence, feedback)),
                self.lm,
            )
        except Exception as exc:  # noqa: BLE001 - an unusable reply is a failed round, kept
            return Candidate(code="", problem=f"no candidate: {call_failure(exc)}"), Usage()
        if self.form == "code":
            return Candidate(code=unfence(html.unescape(str(pred.code or ""))) + "\n"), usage
        try:
            spec = spec_from(pred)
            check_spec(spec, brief.param_names, catalog.names())
        except SpecError as exc:
            raw = {k: str(getattr(pred, k, "")) for k in ToolSpec.model_fields if k != "tool"}
            return Candidate(code="", spec=raw, problem=f"spec rejected: {exc}"), usage
        tool = catalog.tool(spec.server, spec.tool)
        assert tool is not None  # check_spec found it
        code = compile_spec(
            spec, brief.node_id, brief.text, tool.query_argument(), tool.time_argument()
        )
        return Candidate(code=code, spec=spec.model_dump()), usage


def shown(candidate: Candidate) -> str:
    """The candidate as the reflector and the next round see it: the spec, else the code."""
    if candidate.spec is not None:
        text = json.dumps(candidate.spec, indent=1)
        return f"{text}\n(rejected: {candidate.problem})" if candidate.problem else text
    return candidate.code[:3000]
