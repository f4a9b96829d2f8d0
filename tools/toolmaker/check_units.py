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
    if (single := single_measure(spec)) is not None:
        return _measure_unit(single, units)
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


def counts_as_percentage(spec: dict[str, Any], units: dict[str, str], text: str) -> bool:
    """Whether the Check's value is a count and its threshold a percentage (declared both):
    a percentage of counts is the part over the whole."""
    both = _both_units(spec, units, text)
    return both is not None and both[0] == "%" and both[1] == COUNT


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


# What the text's own unit for a threshold settles, where the catalog declares nothing: a scale
# of 100 writes a fraction as a percentage, so a threshold not stated as one takes the value as
# read; an age is a time span, counted in the unit the text gives its threshold.
PERCENTAGES = ("%", "percentage points")
AGE_SPANS = ("minutes", "hours", "days")  # the text's units an age's ``age_unit`` can be
NOT_NUMBERS = ("mean", "sum", "min", "max", "last", "first")  # a time column's: a time


def stated_unit(text: str, param: str) -> tuple[bool, str | None]:
    """Whether ``{param}`` is in the text, and the unit written right after it (``percent``
    spelled out is ``%``; None: a count or no unit)."""
    at = re.search(r"\{" + re.escape(param) + r"\}(\s?(?:percent|per cent)\b)?", text)
    if not at:
        return False, None
    return True, "%" if at.group(1) else unit_after(text, param)


def single_measure(spec: dict[str, Any]) -> dict[str, Any] | None:
    """The measurement the Check's value is, when its value names one (None: a formula)."""
    measures = spec.get("measures") or {}
    m = measures.get(str(spec.get("value", "")).replace(" ", ""))
    return m if isinstance(m, dict) else None


def text_settles(spec: dict[str, Any], text: str) -> tuple[dict[str, Any], list[str]]:
    """The Check with what its threshold's unit in the text settles (scale, an age's unit), and
    a note per change. A threshold the text does not name settles nothing.

    Example:
        >>> spec = {"value": "a", "measures": {"a": {"table": "t", "reduce": "age"}},
        ...         "scale": 100, "threshold": "limit"}
        >>> text_settles(spec, "replaced more than {limit} hours ago")[1]
        ['scale 100 -> 1: {limit} is not stated as a percentage', 'age_unit days -> hours: {limit} is in hours']
    """
    threshold = spec.get("threshold")
    named, unit = stated_unit(text, threshold) if isinstance(threshold, str) else (False, None)
    if not named:
        return spec, []
    notes, name = [], "{" + str(threshold) + "}"
    if spec.get("scale", 1) == 100 and unit not in PERCENTAGES:
        notes.append(f"scale 100 -> 1: {name} is not stated as a percentage")
        spec = {**spec, "scale": 1}
    m = single_measure(spec)
    if m is not None and m.get("reduce") == "age" and unit in AGE_SPANS:
        if (m.get("age_unit") or "days") != unit:
            notes.append(f"age_unit {m.get('age_unit') or 'days'} -> {unit}: {name} is in {unit}")
            key = str(spec["value"]).replace(" ", "")
            spec = {**spec, "measures": {**spec["measures"], key: {**m, "age_unit": unit}}}
    return spec, notes


def time_problem(spec: dict[str, Any], time_columns: Any) -> str | None:
    """Why a measurement of the Check reads a time where it needs a number: the mean, sum,
    min, max, last or first of a column the catalog holds as a time (``time_columns(table)``)
    is a time, not a number; how long ago it was is an age. None: no such measurement."""
    for key, m in (spec.get("measures") or {}).items():
        if not isinstance(m, dict) or "table" not in m or m.get("reduce") not in NOT_NUMBERS:
            continue
        col = m.get("column")
        if col and col in time_columns(m["table"]):
            return (
                f"measures.{key}: {m['reduce']} of {col} is a time, not a number: how long ago "
                f"it was is reduce age with time_column {col}"
            )
    return None
