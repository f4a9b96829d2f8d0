"""What a made spec measures differently from a reference spec, field by field.

The tool-maker's evaluation names, for each node that fails, where its kept spec departs from
the library's verified one: a source it reads or misses, a window, a reduction, a filter, the
formula, the comparison, a missing-data rule. Measurements are matched by what they read
(server, metric or table and columns), never by their names, which are free.

Example:
    >>> ref = {"measures": {"e": {"server": "robotics", "metric": "pick_errors", "minutes": 15},
    ...                     "n": {"server": "robotics", "metric": "pick_attempts", "minutes": 15}},
    ...        "value": "e / n", "scale": 100, "op": ">", "threshold": "max_pct"}
    >>> made = {"measures": {"a": {"server": "robotics", "metric": "pick_errors", "minutes": 30}},
    ...         "value": "a", "op": ">", "threshold": "max_pct"}
    >>> differences(made, ref)[:3]
    ['does not read pick_attempts', 'value pick_errors (library: pick_errors / pick_attempts)', 'scale 1 (library: 100)']
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from sopgraph.tools.spec.model import Check, FieldMeasure, Keep, Measure

_CHECK_FIELDS = ("scale", "op", "threshold", "missing", "zero_division")
_SOURCE_FIELDS = ("server", "metric", "table", "column", "columns", "tool", "field")
_NAME = re.compile(r"[A-Za-z_]\w*")


def source(m: Measure) -> str:
    """What a measurement reads: the metric, ``table.column`` (``table.*`` counts rows), or
    ``tool.field`` of a served record."""
    if isinstance(m, FieldMeasure):
        return f"{m.tool}.{m.field}"
    if m.kind == "series":
        return m.metric
    cols = ",".join(m.columns) if m.columns else (m.column or "*")
    return f"{m.table}.{cols}"


def differences(made: Check | dict[str, Any], reference: Check | dict[str, Any]) -> list[str]:
    """Each way ``made`` departs from ``reference``, one short phrase each; [] when none."""
    a = made if isinstance(made, Check) else Check.from_dict(made)
    b = reference if isinstance(reference, Check) else Check.from_dict(reference)
    out: list[str] = []
    twice = _read_twice(a) | _read_twice(b)
    mine, theirs = _labelled(a, twice), _labelled(b, twice)
    out += [f"does not read {s}" for s in theirs if s not in mine]
    out += [f"reads {s}, which the library does not" for s in mine if s not in theirs]
    value_a, value_b = _formula(a.value, mine), _formula(b.value, theirs)
    if value_a != value_b:
        out.append(f"value {value_a} (library: {value_b})")
    for name in _CHECK_FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        if x != y and not (name == "zero_division" and len(b.measures) == 1):
            out.append(f"{name} {_show(x)} (library: {_show(y)})")
    if a.guard != b.guard:
        out.append(f"guard {_formula(a.guard, mine)} (library: {_formula(b.guard, theirs)})")
    lookups_a = {(x.table, x.column) for x in a.lookups.values()}
    lookups_b = {(x.table, x.column) for x in b.lookups.values()}
    out += [f"does not look up {t}.{c}" for t, c in sorted(lookups_b - lookups_a)]
    out += [
        f"looks up {t}.{c}, which the library does not" for t, c in sorted(lookups_a - lookups_b)
    ]
    for src, (_, mb) in theirs.items():
        if src not in mine:
            continue
        ma = mine[src][1]
        for name in (f for f in type(mb).model_fields if f not in _SOURCE_FIELDS):
            x, y = getattr(ma, name, None), getattr(mb, name, None)
            if x != y:
                out.append(f"{src} {name} {_show(x)} (library: {_show(y)})")
    return out


def _read_twice(check: Check) -> set[str]:
    """The sources ``check`` reads more than once (now and an hour before)."""
    count = Counter(source(m) for m in check.measures.values())
    return {src for src, n in count.items() if n > 1}


def _labelled(check: Check, twice: set[str]) -> dict[str, tuple[str, Measure]]:
    """Each measurement under what it reads; a source either spec reads twice is numbered in
    order (``units_inducted#1``, ``units_inducted#2``) in both."""
    seen: Counter[str] = Counter()
    out = {}
    for name, m in check.measures.items():
        src = source(m)
        seen[src] += 1
        out[f"{src}#{seen[src]}" if src in twice else src] = (name, m)
    return out


def _formula(text: str | None, labelled: dict[str, tuple[str, Measure]]) -> str:
    """A formula with each measurement's name replaced by what it reads."""
    if text is None:
        return "none"
    names = {name: label for label, (name, _) in labelled.items()}
    return " ".join(_NAME.sub(lambda g: names.get(g.group(0), g.group(0)), text).split())


def _show(value: Any) -> str:
    if isinstance(value, Keep):
        return f"keep {value.op} {value.threshold}"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {v}" for k, v in value.items()) + "}" if value else "{}"
    return str(value)
