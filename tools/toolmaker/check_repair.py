"""What a drawn Check that cannot vote goes back with: why it was rejected, the feedback the
model gets, and the grammar its repair is drawn under.

A repair is drawn under the node's own grammar, except where the declared units say what the
value must be: a count compared with a percentage (``check_units.counts_as_percentage``) is
repaired under the two-measurement shape with value ``a / b`` and scale 100 (the part over the
whole, as a percentage), read from the same catalog (``grammar.spec_model(..., ratio=True)``).
The units are declarations (the catalog's and the text's), so the narrowing is theirs, not a
guess at what the text means.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from sopgraph.tools.spec import Check, SpecError
from sopgraph.tools.spec.bind import unbound
from sopgraph.tools.toolmaker import check_units as units_in
from sopgraph.tools.toolmaker.grammar import response_format


def rejected(spec: dict[str, Any] | None, fields: list[str] | None = None) -> str | None:
    """Why the validator rejects a sampled Check, or (given the run input's ``fields``) why
    it cannot bind its ``$names`` on it (None: it is valid, or there is none)."""
    if spec is None:
        return None
    try:
        check = Check.from_dict(spec)
        check.validate()
    except SpecError as exc:
        return str(exc)
    return unbound(check, fields) if fields is not None else None


def decided(spec: dict[str, Any] | None) -> str | None:
    """Why the Check's verdict is settled before any data is read: its value is one count (never
    below 0, as its scale is positive) and its comparison holds, or fails, for every count
    (``>= 0`` is always true, ``< 0`` never). None: the data can decide it, or the threshold
    is a parameter, whose value the run binds."""
    m = units_in.single_measure(spec) if spec is not None else None
    if m is None or m.get("reduce") != "count" or (m.get("default") or 0) < 0:
        return None
    t, op, scale = spec.get("threshold"), spec.get("op"), spec.get("scale", 1)
    if isinstance(t, bool) or not isinstance(t, int | float) or not scale or scale < 0:
        return None
    always = {">=": t <= 0, ">": t < 0}.get(op)
    never = {"<": t <= 0, "<=": t < 0}.get(op)
    if always or never:
        return (
            f"op {op} {t}: the value is a count, never below 0, so this comparison is "
            f"{'true' if always else 'false'} before any data is read: 'any' is > 0, 'none' "
            "is <= 0, 'at least n' is >= n"
        )
    return None


def feedback(spec: dict[str, Any], why: str) -> str:
    """The feedback a rejected Check goes back with: the Check and the validator's one line
    (the grammar holds each field to its names; a rule between fields is the validator's)."""
    return (
        f"this spec was rejected:\n{json.dumps(spec, sort_keys=True)}\n"
        f"why: {why}\nwrite the spec again without this problem"
    )


def repair_format(
    fmt: dict[str, Any],
    ratio: Callable[[], type[BaseModel]],
    units: dict[str, str],
    text: str,
    fields: list[str],
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The reply format a rejected Check's repair is drawn under: the ``ratio()`` reply's
    where what sent it back is its units (the validator and its bindings pass it, and its value
    is a count against a percentage), else the node's own ``fmt``: a repair answers the reason
    given."""

    def format_for(spec: dict[str, Any]) -> dict[str, Any]:
        if rejected(spec, fields) is None and units_in.counts_as_percentage(spec, units, text):
            return response_format(ratio())
        return fmt

    return format_for
