"""How a spec's names meet a run: ``$field`` from the input or a lookup, thresholds from params.

Example:
    >>> Bound({"site": "BFI4"}).value("$site", "where.site"), Bound({}).value("escalation", "x")
    ('BFI4', 'escalation')
"""

from __future__ import annotations

from typing import Any

from sopgraph.tools.spec.model import Check, Measure, SpecError


class Bound:
    """The input's fields and the lookups' values, for ``$name`` references."""

    def __init__(self, fields: dict[str, Any]):
        self.fields = fields

    def value(self, ref: Any, path: str) -> Any:
        if isinstance(ref, str) and ref.startswith("$"):
            name = ref[1:]
            if name not in self.fields or self.fields[name] is None:
                raise SpecError(_not_bound(path, ref, self.fields))
            return self.fields[name]
        return ref

    @staticmethod
    def measure(m: Measure, ctx: Any) -> Measure:
        """``m`` with a formula ``minutes`` and a parameter ``min_count`` read from ``ctx.params``."""
        from sopgraph.tools.spec.expr import evaluate, names

        if isinstance(getattr(m, "minutes", None), str):
            params = getattr(ctx, "params", {}) or {}
            for name in names(m.minutes):
                if name not in params:
                    raise SpecError(f"minutes: {name!r} is not a site parameter")
            m = m.model_copy(update={"minutes": evaluate(m.minutes, params)})
        if isinstance(getattr(m, "min_count", None), str):
            params = getattr(ctx, "params", {}) or {}
            if m.min_count not in params:
                raise SpecError(f"min_count: {m.min_count!r} is not a site parameter")
            m = m.model_copy(update={"min_count": params[m.min_count]})
        return m

    @staticmethod
    def threshold(ref: str | float, ctx: Any) -> float:
        if isinstance(ref, int | float):
            return float(ref)
        params = getattr(ctx, "params", {}) or {}
        if ref not in params:
            raise SpecError(
                f"threshold: {ref!r} is not a site parameter (have {', '.join(sorted(params))})"
            )
        return params[ref]


def _not_bound(path: str, ref: str, names: Any) -> str:
    have = ", ".join(f"${k}" for k in sorted(names)) or "none"
    return f"{path}: {ref} is not an input field or lookup ({have})"


def _refs(path: str, value: Any) -> list[tuple[str, str]]:
    """The ``$name`` references in ``value`` (a string, a mapping or a list), with their paths."""
    if isinstance(value, str):
        return [(path, value)] if value.startswith("$") else []
    if isinstance(value, dict):
        return [r for k, v in value.items() for r in _refs(f"{path}.{k}", v)]
    if isinstance(value, list | tuple):
        return [r for i, v in enumerate(value) for r in _refs(f"{path}[{i}]", v)]
    return []


def _first_unbound(refs: list[tuple[str, str]], known: set[str]) -> str | None:
    for path, ref in refs:
        if ref[1:] not in known and not (path.endswith(".of") and ref == "$timestamp"):
            return _not_bound(path, ref, known)
    return None


def unbound(check: Check, fields: list[str]) -> str | None:
    """Why ``check`` cannot bind its names on a run whose input has ``fields`` (None: it can),
    in the spec runner's words: each ``$name`` is an input field or a lookup named before it
    (the lookups run in order, then every measurement); a record field's ``of`` may also be
    ``$timestamp``, the input's time, which the runner reads as the input gives it."""
    known = set(fields)
    for name, lookup in check.lookups.items():
        if why := _first_unbound(_refs(f"lookups.{name}.where", lookup.where), known):
            return why
        known.add(name)
    for key, m in check.measures.items():
        data = m.model_dump(include={"where", "match", "args", "column", "columns", "of"})
        if why := _first_unbound(_refs(f"measures.{key}", data), known):
            return why
    return None
