"""The units an SOP's text gives its parameters, and the measurements a verdict states in them.

The text is the declaration: ``more than {idle_pct_threshold}% of the time`` makes that
parameter a percentage, ``within the last {cup_replaced_days} days`` a number of days. A tool
reports ``observed`` in the unit of its threshold: a plain number, or a dict whose measured
values sit under keys that name the unit (``fill_pct``, ``age_days``, ``minutes_into_shift``).

Example:
    >>> unit_after("idle more than {idle_pct_threshold}% of the time", "idle_pct_threshold")
    '%'
    >>> measured({"robot": "R02", "age_days": 1.83}, "days")
    [1.83]
    >>> with_unit(67.2667, "%")
    '67.27%'
"""

from __future__ import annotations

import re
from typing import Any

from sopgraph.graphs.model import Sop, Verdict

# A measurement unit as an SOP text writes it after a parameter -> the words that name it in
# an observed dict's keys. A count's noun ("3 jams", "4 induct stations") is not a unit.
UNITS: dict[str, frozenset[str]] = {
    "%": frozenset({"pct", "percent"}),
    "percentage points": frozenset({"points", "pp"}),
    "seconds": frozenset({"seconds", "s"}),
    "minutes": frozenset({"minutes", "min"}),
    "hours": frozenset({"hours", "h"}),
    "days": frozenset({"days"}),
    "kPa": frozenset({"kpa"}),
    "units per hour": frozenset({"uph"}),
    "UPH": frozenset({"uph"}),
    "ms": frozenset({"ms"}),
}
_AFTER = "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True))


def unit_after(text: str, param: str) -> str | None:
    """The unit written right after ``{param}`` in ``text``; None for a count or no unit."""
    found = re.search(r"\{" + re.escape(param) + r"\}\s?(" + _AFTER + r")(?![A-Za-z])", text)
    return found.group(1) if found else None


def threshold_unit(
    sop: Sop, node_id: str, threshold: Any, params: dict[str, Any], observed: Any = None
) -> str | None:
    """The unit of the parameter in the node's text that ``threshold`` is (by its value).

    None when no parameter of the text has that value, when it is a count, or when two
    parameters with that value have different units (3 stations and 3% at one site): a
    bare number is better than a wrong unit. A threshold the tool derived (last hour's flow,
    not a parameter) takes the one unit of the text's parameters that ``observed`` states a
    measurement in (``capacity_uph`` for ``{station_rated_uph} units per hour``): a verdict
    compares its observation with its threshold, so both are in that unit.
    """
    node = sop.nodes.get(node_id)
    if node is None or isinstance(threshold, bool) or not isinstance(threshold, int | float):
        return None
    values = {**sop.params, **params}
    names = re.findall(r"\{(\w+)\}", node.text)
    if matching := {n for n in names if values.get(n) == threshold}:
        units = {unit_after(node.text, n) for n in matching}
    else:  # derived: the units of the text that the observation is measured in
        units = {u for n in names if (u := unit_after(node.text, n)) and measured(observed, u)}
    return units.pop() if len(units) == 1 else None


def _numbers(value: Any) -> list[float]:
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int | float):
        return [value]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _numbers(v)]
    if isinstance(value, list):
        return [x for v in value for x in _numbers(v)]
    return []


def measured(observed: Any, unit: str) -> list[float] | None:
    """The values ``observed`` states in ``unit``: the number itself, or the numbers under
    the keys that name the unit (``[]`` when such a key holds None: nothing on record); None
    when no key names the unit (a fraction under ``fill``, seconds under ``age_s`` for a
    threshold in days)."""
    if isinstance(observed, int | float) and not isinstance(observed, bool):
        return [observed]
    if not isinstance(observed, dict):
        return None
    words = UNITS.get(unit, frozenset())
    keys = [k for k in observed if words & set(k.lower().split("_"))]
    return [x for k in keys for x in _numbers(observed[k])] if keys else None


def with_unit(value: Any, unit: str | None) -> str:
    """``67.27%``, ``1.83 days``; None as ``none``; a value that is not a number, or no unit,
    as it is."""
    if value is None:
        return "none"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    text = f"{value:.2f}".rstrip("0").rstrip(".") if isinstance(value, float) else str(value)
    if unit is None:
        return text
    return f"{text}%" if unit == "%" else f"{text} {unit}"


def unit_problems(
    sop: Sop, node_id: str, samples: list[tuple[Verdict, dict[str, Any]]]
) -> list[str]:
    """What is wrong with the units of one node's verdicts (each with its site's parameters).

    Of every verdict whose threshold has a unit (``threshold_unit``): ``observed`` must state
    a measurement in it, and the threshold must separate the true verdicts' measurements from
    the false ones' (a fraction 0.9 against 85%, or 250,000 seconds against 3 days, cannot).
    """
    problems, points, unstated = [], [], []
    for verdict, params in samples:
        if verdict.value == "no_data":
            continue
        unit = threshold_unit(sop, node_id, verdict.threshold, params, verdict.observed)
        if unit is None:  # a count, a state, or no threshold: nothing to convert
            continue
        values = measured(verdict.observed, unit)
        if values is None:  # e.g. no picks at all: a verdict with no rate to state
            unstated.append(f"observed {verdict.observed!r} states nothing in {unit}")
        elif values:
            points.append((verdict.value == "true", max(values), min(values), verdict.threshold))
    if unstated and not points:
        problems.append(f"{node_id}: no verdict states its measurement; {unstated[0]}")
    trues, falses = [p for p in points if p[0]], [p for p in points if not p[0]]
    if trues and falses:  # the threshold must split them, one way round, on max or min
        separated = any(
            all(sign * (p[i] - p[3]) >= 0 for p in trues)
            and all(sign * (p[i] - p[3]) <= 0 for p in falses)
            for i in (1, 2)
            for sign in (1, -1)
        )
        if not separated:
            problems.append(
                f"{node_id}: the threshold does not separate true from false observations "
                f"(true {sorted(p[1] for p in trues)[:3]}…, false {sorted(p[1] for p in falses)[:3]}…, "
                f"threshold {points[0][3]}): observed and threshold are in different units"
            )
    return problems
