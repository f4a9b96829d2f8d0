"""The one error a spec raises: ``str()`` names the field (``measures.idle.reduce``) and why.

``from_validation`` turns pydantic's ``ValidationError`` (a list of errors, each with a
location through the union's tags and the members of a type union) into that one line.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ValidationError


class SpecError(ValueError):
    """A spec that cannot run; ``str()`` names the field (``measures.idle.reduce``) and why."""


# A location step that names a member of a type union (``int``, ``str``, ``tuple[str, str]``,
# ``function-after[...]``), not a field; the measure kinds' tags are dropped separately.
_MEMBER = re.compile(r"^(int|float|str|bool|none|Keep)$|[\[\-]")
_EXPECTED = {"int_type": "a number", "float_type": "a number", "string_type": "text",
             "bool_type": "true or false", "none_required": "null", "dict_type": "an object",
             "model_type": "an object", "tuple_type": "a list", "list_type": "a list",
             "string_too_short": "a non-empty string", "literal_error": "one of the names"}  # fmt: skip


def from_validation(exc: ValidationError, models: dict[str, type[BaseModel]]) -> SpecError:
    """The first error of ``exc`` as one line: ``path: what is wrong`` (every error at that
    path joined, so a value that is neither a number nor text says both). ``models``: the
    check under ``""``, each measurement kind under its tag, ``keep`` and ``lookup``."""
    errors = exc.errors()
    paths = [_path(e["loc"], models) for e in errors]
    same = [e for e, p in zip(errors, paths, strict=True) if p == paths[0]]
    e, where = same[0], _join(paths[0]) or "spec"
    kind = e["type"]
    if kind == "extra_forbidden":
        parent = _join(paths[0][:-1]) or "spec"
        known = ", ".join(_model_at(e["loc"][:-1], models).model_fields)
        return SpecError(f"{parent}: unknown field {paths[0][-1]!r}; the fields are {known}")
    if kind == "missing":
        return SpecError(f"{where}: missing")
    if kind == "measure_kind":
        return SpecError(f"{where}: {e['msg']}")
    if kind == "value_error":
        return SpecError(f"{where}: {e['ctx']['error']}")
    if len(same) == 1 and kind == "literal_error":
        allowed = re.sub(r"'([^']*)'", r"\1", e["ctx"]["expected"]).replace(" or ", ", ")
        return SpecError(f"{where}: {e['input']!r} is not one of {allowed}")
    if len(same) == 1 and kind == "string_pattern_mismatch":
        return SpecError(f"{where}: {e['input']!r} is not a plain name")
    wanted = list(dict.fromkeys(_EXPECTED.get(x["type"], x["msg"]) for x in same))
    return SpecError(f"{where}: expected {' or '.join(wanted)}, got {e['input']!r}")


def _path(loc: tuple[Any, ...], models: dict[str, Any]) -> list[str | int]:
    out: list[str | int] = []
    for i, step in enumerate(loc):
        if i == 2 and loc[0] == "measures" and step in models:
            continue  # the measurement's kind: the JSON form has no such key
        if i > 0 and isinstance(step, str) and _MEMBER.search(step):
            continue
        out.append(step)
    return out


def _join(path: list[str | int]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def _model_at(loc: tuple[Any, ...], models: dict[str, type[BaseModel]]) -> type[BaseModel]:
    """The model whose field ``loc`` names: the check, a measurement's kind, a keep, a lookup."""
    if loc and loc[-1] == "keep":
        return models["keep"]
    if len(loc) == 3 and loc[0] == "measures":
        return models[loc[2]]
    if len(loc) == 2 and loc[0] == "lookups":
        return models["lookup"]
    return models[""]
