"""An SOP's input contract: the fields its ``input`` section declares (and ``params_by``, the
one its parameter files are keyed on), checked before any node runs, and published as an
example input, a JSON schema and the graph's input TypedDict.

Example:
    >>> check_run_input(sop, {"type": "station_idle", "site": "BFI4"})
    InputError: input field 'timestamp' is required ...
"""

from __future__ import annotations

import difflib
import json
from datetime import datetime
from typing import Annotated, Any, Literal, NotRequired, Required

from pydantic import Field
from typing_extensions import TypedDict

from sopgraph.graphs.model import InputField, Sop
from sopgraph.graphs.problems import Problem
from sopgraph.graphs.yaml_lines import LineMap

# The largest run input taken (JSON text); an alarm is a few hundred bytes.
MAX_INPUT_BYTES = 1024 * 1024


class InputError(ValueError):
    """A run input that does not fit the SOP; ``str`` is one line saying how to fix it."""


_PY_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "datetime": str,
    "object": dict[str, Any],
    "list": list[Any],
}
_CLASSES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "object": dict,
    "list": list,
}
_WORDS = {
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "datetime": "an ISO 8601 time such as 2025-03-03T04:20:59Z",
    "object": "a JSON object",
    "list": "a JSON list",
}


def _fits(kind: str, value: Any) -> bool:
    if kind == "datetime":
        if not isinstance(value, str):
            return False
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return False
        return True
    if kind in ("integer", "number") and isinstance(value, bool):
        return False  # JSON true is not 1
    return isinstance(value, _CLASSES[kind])


def input_value_problem(name: str, spec: InputField, value: Any) -> str | None:
    """What is wrong with ``value`` for field ``name`` (one phrase), or None when it fits."""
    if not _fits(spec.type, value):
        return f"'{name}' must be {_WORDS[spec.type]}, got {_short(value)}"
    if spec.values is not None and value not in spec.values:
        allowed = ", ".join(repr(v) for v in spec.values)
        return f"'{name}' must be one of {allowed}, got {_short(value)}"
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def entry_nodes(sop: Sop, inp: dict[str, Any]) -> list[str]:
    """The nodes a run on ``inp`` starts at: its ``type``'s entry (the only one if untyped)."""
    kind = inp.get("type")
    if kind is None and len(sop.entry) == 1:
        return next(iter(sop.entry.values()))
    return sop.entry.get(str(kind), [])


def validate_run_input(sop: Sop, inp: Any) -> dict[str, Any]:
    """``inp`` if it is an object within the size limit, picks an entry and fits the SOP's
    input contract; else one ``InputError`` naming what to fix."""
    if not isinstance(inp, dict):
        what = "null" if inp is None else f"a {type(inp).__name__}"
        raise InputError(f'run input must be a JSON object such as {{"type": ...}}, got {what}')
    if len(json.dumps(inp, default=str)) > MAX_INPUT_BYTES:
        raise InputError(
            f"run input is over {MAX_INPUT_BYTES // 1024} KB (the limit); pass ids and let the "
            "SOP's tools fetch the data"
        )
    if not entry_nodes(sop, inp):
        kinds = ", ".join(sorted(sop.entry))
        got = inp.get("type")
        what = f"unknown input type {got!r}" if got is not None else "input has no 'type'"
        raise InputError(f"{what} for SOP {sop.id}; use one of: {kinds}")
    # Every tool gets ``site`` and ``timestamp`` as arguments, declared or not.
    for key, kind in (("site", "string"), ("timestamp", "datetime")):
        if inp.get(key) is not None and key not in sop.input:
            problem = input_value_problem(key, InputField(type=kind), inp[key])
            if problem:
                raise InputError(f"input {problem}")
    entry_type = inp.get("type") or (next(iter(sop.entry)) if len(sop.entry) == 1 else None)
    check_run_input(sop, inp, entry_type)
    return inp


def check_run_input(sop: Sop, inp: dict[str, Any], entry_type: str | None) -> None:
    """Raise one ``InputError`` naming the first field that is missing or does not fit."""
    for name, spec in sop.input.items():
        value = inp.get(name)
        if value is None:
            if spec.required_by(entry_type):
                when = "" if spec.required else f" for {entry_type} inputs"
                example = f', e.g. "{name}": {_json(spec.example)}' if spec.example else ""
                raise InputError(
                    f"input field '{name}' is required{when}; add it{example} "
                    f"(SOP {sop.id}: see `sopgraph run --help` or describe_sop)"
                )
            continue
        problem = input_value_problem(name, spec, value)
        if problem:
            raise InputError(f"input field {problem}")


def _json(value: Any) -> str:
    return json.dumps(value, default=str)


def example_input(sop: Sop, entry_type: str) -> dict[str, Any]:
    """An input that passes ``check_run_input`` for ``entry_type``: the examples of the fields
    it requires (``type`` only when the SOP has more than one entry)."""
    out: dict[str, Any] = {} if len(sop.entry) == 1 else {"type": entry_type}
    for name, spec in sop.input.items():
        if spec.required_by(entry_type):
            out[name] = spec.example if spec.example is not None else f"<{name}>"
    return out


def input_typeddict(sop: Sop) -> type:
    """The SOP's input as a ``typing_extensions.TypedDict`` (LangGraph's input schema)."""
    fields: dict[str, Any] = {}
    kinds = tuple(sop.entry)
    if kinds:
        wrap = Required if len(kinds) > 1 else NotRequired
        fields["type"] = wrap[
            Annotated[Literal[kinds], Field(description="The entry type: picks the first node.")]  # type: ignore[valid-type]
        ]
    for name, spec in sop.input.items():
        desc = spec.description or name
        if spec.required_for:
            desc += f" (required for: {', '.join(spec.required_for)})"
        extra: dict[str, Any] = {"description": desc}
        if spec.example is not None:
            extra["examples"] = [spec.example]
        if spec.type == "datetime":
            extra["json_schema_extra"] = {"format": "date-time"}
        if spec.values is not None:
            extra.setdefault("json_schema_extra", {})["enum"] = spec.values
        typ = Annotated[_PY_TYPES[spec.type], Field(**extra)]
        fields[name] = Required[typ] if spec.required else NotRequired[typ]
    name = "".join(part.title() for part in sop.id.replace("-", "_").split("_")) + "Input"
    return TypedDict(name, fields)  # type: ignore[operator]


def graph_input_typeddict(sop: Sop) -> type:
    """``{"input": <the SOP's input>}``: what a LangGraph client sends to start a run."""
    return TypedDict("RunInput", {"input": Required[input_typeddict(sop)]})  # type: ignore[operator]


def input_json_schema(sop: Sop) -> dict[str, Any]:
    """The SOP's input as a JSON schema (describe_sop, ``run --help``)."""
    from pydantic import TypeAdapter

    return TypeAdapter(input_typeddict(sop)).json_schema()


def describe_input(sop: Sop) -> list[str]:
    """The input contract as text lines (``sopgraph run SOP --help``)."""
    lines = [f"input of {sop.id} (a JSON object; other fields are passed to the tools as is):"]
    kinds = list(sop.entry)
    need = "required" if len(kinds) > 1 else f"optional, default {kinds[0]}"
    lines.append(f"  {'type':<12} one of: {', '.join(kinds)} ({need}); picks the entry")
    for name, spec in sop.input.items():
        need = (
            "required"
            if spec.required
            else (
                f"required for {', '.join(spec.required_for)}" if spec.required_for else "optional"
            )
        )
        words = [f"{spec.type}, {need}"]
        if spec.values is not None:
            words.append("one of " + ", ".join(_json(v) for v in spec.values))
        if spec.description:
            words.append(spec.description)
        if spec.example is not None:
            words.append(f"e.g. {_json(spec.example)}")
        lines.append(f"  {name:<12} " + "; ".join(words))
    if not sop.input:
        lines.append("  (the SOP declares no other fields: add an 'input' section to check them)")
    lines.append(f"example: {_json(example_input(sop, kinds[0]))}")
    return lines


# Field types whose value can name a parameter file (``params/<value>.yaml``).
_KEY_TYPES = ("string", "integer")


def input_contract_problems(sop: Sop, lines: LineMap, file: str) -> list[Problem]:
    """Mistakes in the SOP's ``input`` section and in ``params_by``, the input field its
    parameter files are keyed on; for ``graphs.validate``."""
    out: list[Problem] = []

    def add(line: int, message: str) -> None:
        out.append(Problem(file, line, "", message))

    for name, spec in sop.input.items():
        if name == "type":
            add(
                lines.of("input", name),
                "input field 'type' is implicit (it picks the entry: one of "
                f"{', '.join(sop.entry)}); remove it from 'input'",
            )
            continue
        for kind in spec.required_for:
            if kind not in sop.entry:
                near = difflib.get_close_matches(kind, list(sop.entry), n=1)
                hint = f"did you mean '{near[0]}'?" if near else "name an entry type"
                add(
                    lines.of("input", name, "required_for"),
                    f"input.{name}.required_for names unknown entry type '{kind}'; {hint}",
                )
        problem = None if spec.example is None else input_value_problem(name, spec, spec.example)
        if problem:
            add(lines.of("input", name, "example"), f"input.{name}.example does not fit: {problem}")
    by = sop.params_by
    fields = [f for f in sop.input if f != "type"]
    if by is not None and by not in fields:
        near = difflib.get_close_matches(by, fields, n=1)
        hint = f"did you mean '{near[0]}'?" if near else f"declare '{by}' under 'input'"
        add(
            lines.of("params_by"),
            f"params_by names '{by}', which is not a field of 'input' "
            f"(fields: {', '.join(fields) or 'none'}); {hint}",
        )
    elif by is not None and sop.input[by].type not in _KEY_TYPES:
        add(
            lines.of("params_by"),
            f"params_by names input field '{by}' of type {sop.input[by].type}, whose value "
            "cannot name a parameter file; key parameters on a string or integer field",
        )
    return out
