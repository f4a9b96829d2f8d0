"""The CodeAct sub-agent's prompt texts: the system prompt (``codeact.md``) and its turn messages.

Example:
    >>> spec = FunctionSpec(name="robotics_list_metrics", server="robotics", tool="list_metrics")
    >>> "robotics_list_metrics()" in render_functions([spec])
    True
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

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
LAST_TURN = (
    "This is your last reply: answer now, without code, with ANSWER/VERDICT/OBSERVED/THRESHOLD."
)


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


def example_call(specs: list[FunctionSpec]) -> str:
    """A call of the most query-like function with placeholder arguments, for the prompt's example."""
    if not specs:
        return "None  # no function is available: answer no_data"
    spec = next((s for s in specs if "query" in s.name), specs[0])
    required = spec.input_schema.get("required") or []
    return f"{spec.name}({', '.join(f'{name}=<{name}>' for name in required)})"


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
) -> str:
    """The CodeAct system prompt for one node: the check, its context, the functions, the rules."""
    values = {
        "question": " ".join(question.split()),
        "site": site or "unknown",
        "timestamp": timestamp or "unknown",
        "alarm": _compact(alarm),
        "params": _compact(params),
        "parents": _compact(parents),
        "data": ", ".join(data or []) or "none",
        "functions": render_functions(functions),
        "example": example_call(functions),
        "imports": ", ".join(imports),
        "max_turns": str(max_turns),
    }
    # Only known names are replaced, so braces in the template's prose stay as written.
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), TEMPLATE)


def render_observation(stdout: str, error: str | None, turns_left: int) -> str:
    """What the model is shown after its code ran."""
    parts = [f"Output:\n{stdout.rstrip() or '(nothing printed)'}"]
    if error:
        parts.append(f"Error:\n{error.rstrip()}")
    if turns_left <= 1:
        parts.append(LAST_TURN)
    return "\n\n".join(parts)
