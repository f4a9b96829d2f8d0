"""The spec's fields: measurements, lookups, a value, a comparison and the missing-data rules.

Plain dataclasses (standard library only, like the kit) so a tool file that holds a spec is
as hygienic as a hand-written one and can run wherever a tool runs. ``Check.from_dict`` reads
the JSON form (what the tool-maker writes) and refuses a field it does not know with the
field's path; ``Check.to_dict`` writes it back, so a spec round-trips through JSON unchanged.

Names a spec may use:
- ``$name`` in a ``where``/``match`` value: the run input's field ``name`` (``$site``,
  ``$station``, ``$order_id``) or a lookup's name; any other string is a literal.
- a ``threshold``: a site parameter's name (``ctx.params``) or a number.
- the ``value`` expression: the measurements' names, numbers, ``+ - * /``, parentheses and
  ``max(...)``, ``min(...)``, ``abs(...)``.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from sopgraph.tools.spec.errors import SpecError
from sopgraph.tools.spec.expr import names

REDUCES = ("mean", "sum", "min", "max", "count", "last", "first", "increase", "rises", "age")
AGGREGATES = ("mean", "sum", "min", "max")  # what a rows measurement with columns reduces by
SERIES_REDUCES = ("mean", "sum", "min", "max", "count", "last")  # PromQL's *_over_time
ACROSS = ("sum", "mean", "min", "max", "count")
OPERATORS = (">", ">=", "<", "<=", "==", "!=")
OUTCOMES = ("no_data", "true", "false")
EDGES = ("(]", "[)", "[]")  # which window edge is in: "(]" is t-window < time <= t
AGE_UNITS = {"minutes": 60.0, "hours": 3600.0, "days": 86400.0}
# PromQL's names (the Prometheus data model): a metric's and a label's. A series measurement's
# names go into the query's text (its label values go in quoted), so nothing else may pass.
METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


@dataclass(frozen=True)
class Keep:
    """Keep only the series whose own value passes ``value <op> threshold`` (a spread)."""

    op: str
    threshold: str | float


@dataclass(frozen=True)
class Measure:
    """One number read through MCP.

    A series measurement (``metric``) reads a PromQL server: ``<reduce>_over_time`` of the
    series matching ``match`` over the ``minutes`` before the input's time, then ``across``
    the matching series (after ``keep``); with ``per``, each series is first divided by the
    same-labelled series of the metric ``per`` read the same way (a per-station rate: errors
    per attempt; a series of ``per`` with no value or 0 is dropped, one of ``metric`` absent
    counts 0), and ``scale`` multiplies each (a ratio compared in percent: ``scale: 100``).
    A rows measurement (``table``) reads a SQL server:
    ``reduce`` of ``column`` over the rows matching ``where`` whose ``time_column`` falls in
    the window (``edge``), or whose ``open_at`` interval holds the input's time. ``age`` with
    no window reads the rows up to the input's time (work logged after it has not happened yet).

    ``minutes`` may be a formula over site parameters (``"5 * jam_persist_intervals"``).
    ``min_count`` (a number or a site parameter): fewer values than this in the window (non-null
    ``column`` values, rows for a count of rows, counter steps for increase/rises) is no value.
    ``rises``: like ``increase``, but the number of counter steps above 0 (intervals in which
    the counter went up). A rows measurement with ``columns`` reduces each column (``column``
    and each entry may be a ``$name``, a lookup's value), keeps the non-null ones (after
    ``keep``) and takes ``across`` them, like the series of a metric.
    """

    server: str
    metric: str | None = None
    match: dict[str, str] = field(default_factory=dict)
    across: str = "sum"
    keep: Keep | None = None
    per: str | None = None  # series: divide each by the same-labelled series of this metric
    scale: float = 1  # series: multiplies each series' value (after per), before keep/across
    table: str | None = None
    column: str | None = None  # None with reduce "count": count(*), the rows
    columns: tuple[str, ...] = ()  # several columns, each reduced, then `across` them
    where: dict[str, Any] = field(default_factory=dict)
    time_column: str | None = None
    open_at: tuple[str, str] | None = None  # (start, end): start <= t and (end null or > t)
    minutes: float | str | None = None  # the window (or a formula over site parameters)
    offset_minutes: float = 0  # the window ends this long before the input's time
    edge: str = "(]"
    reduce: str = "mean"
    step_minutes: float = 5  # increase: the baseline row is at most this much older
    age_unit: str = "days"
    default: float | None = None  # the value when there is none (else the check's `missing`)
    missing: str | None = None  # the verdict when this one has no value and no default
    min_count: str | float | None = None  # fewer values than this: no value

    @property
    def kind(self) -> str:
        return "series" if self.metric else "rows"


@dataclass(frozen=True)
class Lookup:
    """One value from a table, named for ``$name`` use (the alarmed station's robot id)."""

    server: str
    table: str
    column: str
    where: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Check:
    """A decision: ``value <op> threshold`` with explicit outcomes for missing data.

    ``missing``: the verdict when a measurement the value needs has no value (no rows, no
    series, all null) and gives no ``default``, or a lookup finds nothing. ``zero_division``:
    the verdict when the value divides by zero. ``scale`` multiplies the value before it is
    compared and reported (0.8 of plan -> 80 with ``scale: 100``), so ``observed`` is in the
    SOP text's unit.

    ``guard``: a formula over measurements that must be above 0 for the check to decide, else
    the verdict is ``missing`` (a count of the rows the decision needs: no robot has a state at
    the alarm). ``verdict_threshold``: what the verdict states as its threshold: ``""`` (the
    default) the compared number, ``None`` none (the SOP names no threshold: "a ticket was
    open"), other text that text (the state looked for: ``"fault"``). A measurement's own
    ``missing`` overrides the check's when that measurement has no value (no replacement on
    record means "not recently": ``false``), a lookup that finds nothing stays ``missing``.
    """

    measures: dict[str, Measure]
    value: str
    op: str
    threshold: str | float
    missing: str = "no_data"
    zero_division: str = "no_data"
    lookups: dict[str, Lookup] = field(default_factory=dict)
    scale: float = 1
    unit: str = ""
    round_to: int = 6
    guard: str | None = None
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
        d = _obj(data, "spec")
        _only(d, cls, "spec")
        measures = _obj(d.get("measures"), "measures")
        if not measures:
            raise SpecError("measures: a check needs at least one measurement")
        check = cls(
            measures={k: _measure(v, f"measures.{k}") for k, v in measures.items()},
            value=_str(d.get("value"), "value"),
            op=_enum(d.get("op"), OPERATORS, "op"),
            threshold=_threshold(d.get("threshold"), "threshold"),
            missing=_enum(d.get("missing", "no_data"), OUTCOMES, "missing"),
            zero_division=_enum(d.get("zero_division", "no_data"), OUTCOMES, "zero_division"),
            lookups={
                k: _lookup(v, f"lookups.{k}")
                for k, v in _obj(d.get("lookups", {}), "lookups").items()
            },
            scale=_num(d.get("scale", 1), "scale"),
            unit=str(d.get("unit", "")),
            round_to=int(d.get("round_to", 6)),
            guard=None if d.get("guard") is None else _str(d["guard"], "guard"),
            verdict_threshold=_text_or_null(d.get("verdict_threshold", ""), "verdict_threshold"),
        )
        check.validate()
        return check

    def to_dict(self) -> dict[str, Any]:
        """The JSON form, defaults left out (what a person reads in a record)."""
        out = _trim(asdict(self), Check)
        out["measures"] = {k: _trim(asdict(m), Measure) for k, m in self.measures.items()}
        if self.lookups:
            out["lookups"] = {k: _trim(asdict(x), Lookup) for k, x in self.lookups.items()}
        return out

    def bind(self, measures: dict[str, dict[str, Any]] | None = None, **changes: Any) -> Check:
        """This check with ``changes`` made (``threshold``, ``op``, ...) and, per measurement,
        the given fields (``{"fail": {"minutes": 30}}``): how a node that shares another node's
        check says what differs, instead of copying it.

        Raises:
            SpecError: a field or measurement the check does not have, or a result that
                does not validate.
        """
        d = self.to_dict()
        known = {f.name for f in fields(Check)} - {"measures"}
        for name, value in changes.items():
            if name not in known:
                raise SpecError(f"bind: {name!r} is not a field of a check")
            d[name] = value
        for key, diff in (measures or {}).items():
            if key not in d["measures"]:
                have = ", ".join(d["measures"])
                raise SpecError(f"bind: no measurement {key!r}; the check has {have}")
            d["measures"][key] = {**d["measures"][key], **diff}
        check = Check.from_dict(d)
        check.validate()
        return check

    def validate(self) -> None:
        """Refuse what cannot run: a bad expression, an unknown ``$name`` of a lookup, a
        reduce that its kind of measurement has no way to compute."""
        for path, formula in (("value", self.value), ("guard", self.guard)):
            for name in names(formula) if formula is not None else ():
                if name not in self.measures:
                    raise SpecError(
                        f"{path}: {name!r} is not a measurement; use one of "
                        f"{', '.join(sorted(self.measures))}"
                    )
        if self.verdict_threshold is not None and not isinstance(self.verdict_threshold, str):
            raise SpecError("verdict_threshold: expected text or null")
        for key, m in self.measures.items():
            where = f"measures.{key}"
            if m.kind == "series":
                _promql_name(m.metric, METRIC_NAME, "metric", f"{where}.metric")
                if m.per is not None:
                    _promql_name(m.per, METRIC_NAME, "metric", f"{where}.per")
                for label in m.match:
                    _promql_name(label, LABEL_NAME, "label", f"{where}.match")
                if m.per == m.metric:
                    raise SpecError(f"{where}.per: a metric divided by itself is 1")
                if m.table or m.column or m.where:
                    raise SpecError(f"{where}: a metric measurement takes match, not table/where")
                if m.reduce not in SERIES_REDUCES:
                    raise SpecError(
                        f"{where}.reduce: {m.reduce!r} is not one of {', '.join(SERIES_REDUCES)} "
                        "(a metric is reduced by PromQL's *_over_time)"
                    )
                if not m.minutes:
                    raise SpecError(f"{where}.minutes: a metric measurement needs a window")
            else:
                if not m.table:
                    raise SpecError(f"{where}: give a metric or a table")
                if m.per or m.scale != 1:
                    raise SpecError(f"{where}.per/scale: only a metric measurement takes them")
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
            if m.missing is not None and m.missing not in OUTCOMES:
                raise SpecError(f"{where}.missing: {m.missing!r} is not an outcome")
            if isinstance(m.minutes, str):
                try:
                    names(m.minutes)
                except SpecError as exc:
                    raise SpecError(f"{where}.minutes: {exc}") from None
            if m.age_unit not in AGE_UNITS:
                raise SpecError(f"{where}.age_unit: one of {', '.join(AGE_UNITS)}")


# -- field readers (each error names its path) ----------------------------------------------


def _promql_name(name: Any, rule: re.Pattern[str], kind: str, path: str) -> None:
    if not isinstance(name, str) or not rule.fullmatch(name):
        raise SpecError(
            f"{path}: {name!r} is not a PromQL {kind} name ({rule.pattern}); "
            f"name the {kind} as the server lists it"
        )


def _obj(value: Any, path: str) -> dict[str, Any]:
    if value is None:
        raise SpecError(f"{path}: missing")
    if not isinstance(value, dict):
        raise SpecError(f"{path}: expected an object, got {type(value).__name__}")
    return value


def _only(d: dict[str, Any], cls: type, path: str) -> None:
    known = {f.name for f in fields(cls)}
    extra = sorted(set(d) - known)
    if extra:
        raise SpecError(f"{path}: unknown field {extra[0]!r}; the fields are {', '.join(known)}")


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SpecError(f"{path}: expected a non-empty string")
    return value.strip()


def _enum(value: Any, allowed: tuple[str, ...], path: str) -> str:
    if value not in allowed:
        raise SpecError(f"{path}: {value!r} is not one of {', '.join(allowed)}")
    return value


def _text_or_null(value: Any, path: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise SpecError(f"{path}: expected text or null, got {value!r}")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list | tuple):
        raise SpecError(f"{path}: expected a list, got {type(value).__name__}")
    return list(value)


def _num(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SpecError(f"{path}: expected a number, got {value!r}")
    return value


def _threshold(value: Any, path: str) -> str | float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    return _str(value, path)


def _keep(value: Any, path: str) -> Keep | None:
    if value is None:
        return None
    d = _obj(value, path)
    _only(d, Keep, path)
    return Keep(op=_enum(d.get("op"), OPERATORS, f"{path}.op"),
                threshold=_threshold(d.get("threshold"), f"{path}.threshold"))  # fmt: skip


def _measure(value: Any, path: str) -> Measure:
    d = _obj(value, path)
    _only(d, Measure, path)
    open_at = d.get("open_at")
    if open_at is not None:
        if not (isinstance(open_at, list | tuple) and len(open_at) == 2):
            raise SpecError(f"{path}.open_at: expected [start_column, end_column]")
        open_at = (str(open_at[0]), str(open_at[1]))
    minutes, least = d.get("minutes"), d.get("min_count")
    return Measure(
        server=_str(d.get("server"), f"{path}.server"),
        metric=d.get("metric") or None,
        match=dict(_obj(d.get("match", {}), f"{path}.match")),
        across=_enum(d.get("across", "sum"), ACROSS, f"{path}.across"),
        keep=_keep(d.get("keep"), f"{path}.keep"),
        per=d.get("per") or None,
        scale=_num(d.get("scale", 1), f"{path}.scale"),
        table=d.get("table") or None,
        column=d.get("column") or None,
        columns=tuple(str(c) for c in _list(d.get("columns", []), f"{path}.columns")),
        where=dict(_obj(d.get("where", {}), f"{path}.where")),
        time_column=d.get("time_column") or None,
        open_at=open_at,
        minutes=None if minutes is None else _threshold(minutes, f"{path}.minutes"),
        offset_minutes=_num(d.get("offset_minutes", 0), f"{path}.offset_minutes"),
        edge=_enum(d.get("edge", "(]"), EDGES, f"{path}.edge"),
        reduce=_enum(d.get("reduce", "mean"), REDUCES, f"{path}.reduce"),
        step_minutes=_num(d.get("step_minutes", 5), f"{path}.step_minutes"),
        age_unit=_enum(d.get("age_unit", "days"), tuple(AGE_UNITS), f"{path}.age_unit"),
        default=None if d.get("default") is None else _num(d["default"], f"{path}.default"),
        missing=_enum(d["missing"], OUTCOMES, f"{path}.missing") if d.get("missing") else None,
        min_count=None if least is None else _threshold(least, f"{path}.min_count"),
    )


def _lookup(value: Any, path: str) -> Lookup:
    d = _obj(value, path)
    _only(d, Lookup, path)
    return Lookup(
        server=_str(d.get("server"), f"{path}.server"),
        table=_str(d.get("table"), f"{path}.table"),
        column=_str(d.get("column"), f"{path}.column"),
        where=dict(_obj(d.get("where", {}), f"{path}.where")),
    )


def _trim(d: dict[str, Any], cls: type) -> dict[str, Any]:
    defaults = {
        f.name: (f.default_factory() if callable(f.default_factory) else f.default)  # type: ignore[misc]
        for f in fields(cls)
    }
    out = {}
    for k, v in d.items():
        if k in defaults and v == defaults[k] and k not in ("value", "op", "threshold"):
            continue
        out[k] = list(v) if isinstance(v, tuple) else v
    return out
