"""A sampled Check's value in the unit the SOP gives its threshold: units from the catalog and
the text, never from names.

Two sources declare units: the SOP's text (``more than {x_pct}% of ...`` makes ``x_pct`` a
percentage: ``graphs.units.unit_after``) and the data catalog (a metric's ``unit`` in its
metadata, as ``get_metric_metadata`` and Prometheus's own metadata give it). A Check compares
``scale * value`` with its threshold, so where both are known the scale follows: a percentage
read against a percentage is scale 1, a ratio of two like quantities against a percentage is
scale 100, and a count is never a percentage. A Check that breaks this is rejected with the one
line saying why, and the fallback sends it back (``check_fallback``); where the units fix the
scale (``implied_scale``), the scale is theirs: the fallback sets it and records that it did,
as a unit conversion the declarations make, not a guess. Where either unit is not declared (a
table column, a count threshold, a formula over unlike units) nothing is said or set.

Example:
    >>> units = {"fail_pct": "type=gauge; unit=percent"}
    >>> spec = {"value": "a", "measures": {"a": {"metric": "fail_pct"}}, "scale": 100,
    ...         "threshold": "max_pct"}
    >>> print(unit_problem(spec, units, "failed more than {max_pct}% of reads"))
    scale: the value is already a percentage (fail_pct: unit percent) and {max_pct} is one: use scale 1
"""

from __future__ import annotations

import re
from typing import Any

from sopgraph.graphs.units import UNITS, unit_after

COUNT, RATIO = "count", "ratio"
_RATIOS = ("ratio", "fraction", "1")


def _unit_field(meta: str | None) -> str | None:
    """The ``unit=`` of a catalog entry (``type=gauge; unit=percent; help=...``), as written."""
    found = re.search(r"(?:^|;\s*)unit=([^;]+)", meta or "")
    return found.group(1).strip() if found else None


def declared(meta: str | None) -> str | None:
    """The unit a catalog entry declares, in the SOP text's spelling (``%``, ``kPa``), or
    ``count`` / ``ratio``; None when it declares none we know."""
    raw = _unit_field(meta)
    if raw is None:
        return None
    low = raw.lower()
    if low in ("count", "counts", "total"):
        return COUNT
    if low in _RATIOS:
        return RATIO
    for unit, words in UNITS.items():
        if low == unit.lower() or low in words:
            return unit
    return None


def _measure_unit(m: dict[str, Any], units: dict[str, str]) -> tuple[str | None, str]:
    if m.get("reduce") == "count":
        return COUNT, "a count of samples or rows"
    if "metric" in m:
        meta = units.get(str(m["metric"]))
        return declared(meta), f"{m['metric']}: unit {_unit_field(meta) or 'none'}"
    return None, ""


def value_unit(spec: dict[str, Any], units: dict[str, str]) -> tuple[str | None, str]:
    """The unit of the Check's value before its scale, and where it comes from."""
    measures = spec.get("measures") or {}
    value = str(spec.get("value", "")).replace(" ", "")
    if value in measures:
        return _measure_unit(measures[value], units)
    two = re.fullmatch(r"(\w+)([-+/])(\w+)", value)
    if not two or two.group(1) not in measures or two.group(3) not in measures:
        return None, ""
    (a, why_a), (b, why_b) = (_measure_unit(measures[two.group(n)], units) for n in (1, 3))
    if a is None or a != b:
        return None, ""
    why = f"{why_a} and {why_b}" if why_a != why_b else why_a
    if two.group(2) == "/":
        return RATIO, f"a ratio of like quantities ({why})"
    return a, why


def _both_units(
    spec: dict[str, Any], units: dict[str, str], text: str
) -> tuple[str, str, str, str] | None:
    """(the threshold's unit, the value's, where the value's comes from, ``{threshold}``), or
    None when the threshold is not a parameter or either unit is undeclared."""
    threshold = spec.get("threshold")
    if not isinstance(threshold, str):
        return None
    want = unit_after(text, threshold)
    got, why = value_unit(spec, units)
    if want is None or got is None:
        return None
    return want, got, why, "{" + threshold + "}"


def implied_scale(spec: dict[str, Any], units: dict[str, str], text: str) -> tuple[int, str] | None:
    """The scale the declared units give the Check, and why; None when they give none (a unit
    undeclared, or units that no scale reconciles: ``unit_problem`` says which)."""
    both = _both_units(spec, units, text)
    if both is None:
        return None
    want, got, why, name = both
    if want == "%" and got == "%":
        return 1, f"the value is a percentage ({why}) and so is {name}"
    if want == "%" and got == RATIO:
        return 100, f"the value is {why}, a fraction, and {name} a percentage"
    if got == want:
        return 1, f"the value is in {want} ({why}) like {name}"
    return None


def unit_problem(spec: dict[str, Any], units: dict[str, str], text: str) -> str | None:
    """Why the Check's scaled value is not in its threshold's unit (None: it is, or a unit is
    not declared)."""
    both = _both_units(spec, units, text)
    if both is None:
        return None
    want, got, why, name = both
    scale = spec.get("scale", 1)
    if want == "%":
        if got == "%" and scale != 1:
            return (
                f"scale: the value is already a percentage ({why}) and {name} is one: use scale 1"
            )
        if got == RATIO and scale != 100:
            return f"scale: the value is {why}, a fraction; {name} is a percentage: use scale 100"
        if got == COUNT:
            return (
                f"value: the value is a count ({why}) and {name} is a percentage: a percentage "
                "of counts is a / b (the part over the whole) with scale 100"
            )
        if got not in ("%", RATIO):
            return f"value: the value is in {got} ({why}) and {name} is a percentage"
        return None
    if got == want:
        return None if scale == 1 else f"scale: the value is in {want} like {name}: use scale 1"
    if got in (COUNT, RATIO):
        return None  # a derived quantity may still be in the threshold's unit: not ours to say
    return f"value: the value is in {got} ({why}) and {name} is in {want}"
