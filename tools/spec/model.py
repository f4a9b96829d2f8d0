"""The spec's fields: measurements, lookups, a value, a comparison and the missing-data rules.

One pydantic model (``Check``) is the spec: validation, the stored JSON form, the published
JSON Schema (``docs/check.schema.json``) and the tool-maker's per-node grammar (a narrowing of
it, ``tools/toolmaker/grammar.py``) all come from it. ``Check.from_dict`` reads the JSON form
(what the tool-maker writes) and refuses what it does not know in one line naming the field's
path; ``Check.to_dict`` writes it back, so a spec round-trips through JSON unchanged.

Names a spec may use:
- ``$name`` in a ``where``/``match``/``args`` value: the run input's field ``name`` or a
  lookup's name; any other string is a literal.
- a ``threshold``: a site parameter's name (``ctx.params``) or a number.
- the ``value`` expression: the measurements' names, numbers, ``+ - * /``, parentheses and
  ``max(...)``, ``min(...)``, ``abs(...)``.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from pydantic import BaseModel, ValidationError

from sopgraph.tools.spec.errors import SpecError, from_validation
from sopgraph.tools.spec.expr import evaluate, names
from sopgraph.tools.spec.measures import (
    AGE_UNITS,
    AGGREGATES,
    FROZEN,
    KINDS,
    LABEL_NAME,
    METRIC_NAME,
    OPERATORS,
    OPS,
    OUTCOMES,
    REDUCES,
    SERIES_REDUCES,
    AnyMeasure,
    FieldMeasure,
    Keep,
    Measure,
    Number,
    Operator,
    Outcome,
    Param,
    RowsMeasure,
    SeriesMeasure,
    Text,
)

__all__ = ["AGE_UNITS", "OPERATORS", "OUTCOMES", "REDUCES", "SERIES_REDUCES", "Check",
           "FieldMeasure", "Keep", "Lookup", "Measure", "RowsMeasure", "SeriesMeasure",
           "SpecError"]  # fmt: skip


class Lookup(BaseModel):
    """One value from a table, named for ``$name`` use (the alarmed station's robot id)."""

    model_config = FROZEN
    server: Text
    table: Text
    column: Text
    where: dict[str, Any] = {}


class Check(BaseModel):
    """A decision: ``value <op> threshold`` with explicit outcomes for missing data.

    ``missing``: the verdict when a measurement the value needs has no value (no rows, no
    series, all null, no record) and gives no ``default``, or a lookup finds nothing.
    ``zero_division``: the verdict when the value divides by zero. ``scale`` multiplies the
    value before it is compared and reported (0.8 of plan -> 80 with ``scale: 100``), so
    ``observed`` is in the SOP text's unit.

    ``guard``: a formula over measurements that must be above 0 for the check to decide, else
    the verdict is ``missing`` (a count of the rows the decision needs: no robot has a state at
    the alarm). ``verdict_threshold``: what the verdict states as its threshold: ``""`` (the
    default) the compared number, ``None`` none (the SOP names no threshold: "a ticket was
    open"), other text that text (the state looked for: ``"fault"``). A measurement's own
    ``missing`` overrides the check's when that measurement has no value (no replacement on
    record means "not recently": ``false``), a lookup that finds nothing stays ``missing``.
    """

    model_config = FROZEN
    measures: dict[str, AnyMeasure]
    value: Text
    op: Operator
    threshold: Param
    missing: Outcome = "no_data"
    zero_division: Outcome = "no_data"
    lookups: dict[str, Lookup] = {}
    scale: Number = 1
    unit: str = ""
    round_to: int = 6
    guard: Text | None = None
    verdict_threshold: str | None = ""

    # -- JSON form ------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Any) -> Check:
        """The spec in ``data`` (the JSON form), checked field by field.

        Raises:
            SpecError: an unknown or missing field, or a value outside its enumeration.
        """
        if isinstance(data, Check):
            return data
        if not isinstance(data, dict):
            raise SpecError(f"spec: expected an object, got {type(data).__name__}")
        try:
            check = cls.model_validate(data)
        except ValidationError as exc:
            raise from_validation(exc, MODELS) from None
        check.validate()
        return check

    def to_dict(self) -> dict[str, Any]:
        """The JSON form, defaults left out (what a person reads in a record)."""
        return self.model_dump(mode="json", exclude_defaults=True)

    def bind(self, measures: dict[str, dict[str, Any]] | None = None, **changes: Any) -> Check:
        """This check with ``changes`` made (``threshold``, ``op``, ...) and, per measurement,
        the given fields (``{"fail": {"minutes": 30}}``): how a node that shares another node's
        check says what differs, instead of copying it.

        Raises:
            SpecError: a field or measurement the check does not have, or a result that
                does not validate.
        """
        d = self.to_dict()
        known = set(Check.model_fields) - {"measures"}
        for name, value in changes.items():
            if name not in known:
                raise SpecError(f"bind: {name!r} is not a field of a check")
            d[name] = value
        for key, diff in (measures or {}).items():
            if key not in d["measures"]:
                have = ", ".join(d["measures"])
                raise SpecError(f"bind: no measurement {key!r}; the check has {have}")
            d["measures"][key] = {**d["measures"][key], **diff}
        return Check.from_dict(d)

    def validate(self) -> None:
        """Refuse what cannot run on any input: a bad expression, a reduce that its kind of
        measurement has no way to compute. The ``$names`` it binds are checked against one
        input's fields by ``bind.unbound``."""
        if not self.measures:
            raise SpecError("measures: a check needs at least one measurement")
        for path, formula in (("value", self.value), ("guard", self.guard)):
            for name in names(formula) if formula is not None else ():
                if name not in self.measures:
                    raise SpecError(
                        f"{path}: {name!r} is not a measurement; use one of "
                        f"{', '.join(sorted(self.measures))}"
                    )
        for key, m in self.measures.items():
            where = f"measures.{key}"
            if isinstance(m, SeriesMeasure):
                _series(m, where)
            elif isinstance(m, RowsMeasure):
                _rows(m, where)
            minutes = getattr(m, "minutes", None)
            if isinstance(minutes, str):
                try:
                    names(minutes)
                except SpecError as exc:
                    raise SpecError(f"{where}.minutes: {exc}") from None
        self._decides()

    def _decides(self) -> None:
        """Refuse a comparison that holds, or fails, whatever its tests give: a value made only
        of field tests (each 1 or 0) against a number, such as ``a >= 0``, decides nothing."""
        used = names(self.value)
        tests = [self.measures[n] for n in used]
        if not used or isinstance(self.threshold, str) or not all(_is_test(m) for m in tests):
            return
        seen = set()
        for bits in itertools.product((0.0, 1.0), repeat=len(used)):
            try:
                value = evaluate(self.value, dict(zip(sorted(used), bits, strict=True)))
            except ZeroDivisionError:
                continue
            seen.add(OPS[self.op](value * self.scale, self.threshold))
        if len(seen) == 1:
            always = "holds" if seen.pop() else "fails"
            raise SpecError(
                f"op: {self.value} {self.op} {self.threshold} {always} whatever the tests give "
                f"(each of {', '.join(sorted(used))} is 1 or 0): the check decides nothing"
            )


def _is_test(m: Measure) -> bool:
    """A field measurement with a test: its number is 1 or 0."""
    return isinstance(m, FieldMeasure) and any(
        t is not None for t in (m.equals, m.one_of, m.within_days)
    )


def _series(m: SeriesMeasure, where: str) -> None:
    _promql_name(m.metric, METRIC_NAME, "metric", f"{where}.metric")
    if m.per is not None:
        _promql_name(m.per, METRIC_NAME, "metric", f"{where}.per")
    for label in m.match:
        _promql_name(label, LABEL_NAME, "label", f"{where}.match")
    if m.per == m.metric:
        raise SpecError(f"{where}.per: a metric divided by itself is 1")
    if not m.minutes:
        raise SpecError(f"{where}.minutes: a metric measurement needs a window")


def _rows(m: RowsMeasure, where: str) -> None:
    if m.columns and (m.column or m.reduce not in (*AGGREGATES, "count")):
        raise SpecError(f"{where}.columns: reduce mean/sum/min/max/count, no column")
    if m.column is None and not m.columns and m.reduce != "count":
        raise SpecError(f"{where}.column: reduce {m.reduce!r} needs a column")
    if m.keep is not None and not m.columns:
        raise SpecError(f"{where}.keep: a rows measurement keeps among its columns")
    if m.min_count is not None and (m.columns or m.reduce in ("last", "first", "age")):
        raise SpecError(f"{where}.min_count: not with columns or reduce {m.reduce!r}")
    if m.reduce in ("increase", "rises", "last", "first", "age") and not m.time_column:
        raise SpecError(f"{where}.time_column: reduce {m.reduce!r} needs one")
    if m.minutes and not m.time_column:
        raise SpecError(f"{where}.time_column: a window needs a time column")


MODELS: dict[str, type[BaseModel]] = {"": Check, "keep": Keep, "lookup": Lookup, **KINDS}


def _promql_name(name: Any, rule: re.Pattern[str], kind: str, path: str) -> None:
    if not isinstance(name, str) or not rule.fullmatch(name):
        raise SpecError(
            f"{path}: {name!r} is not a PromQL {kind} name ({rule.pattern}); "
            f"name the {kind} as the server lists it"
        )
