"""A spec's measurements: one number each, read through MCP, in one of three kinds.

- a **series** measurement (``metric``) reads a PromQL server;
- a **rows** measurement (``table``) reads a SQL server;
- a **field** measurement (``tool``) reads one field of a record an MCP tool serves
  (``get_ticket(ticket_id=$ticket_id)`` -> ``status``) and tests it: it equals something, is
  one of several things, or is within N days of the input's time or of another field.

The kind is told by the key the JSON form already has (``metric``, ``table`` or ``tool``), so a
stored spec needs no ``kind`` field. ``Measure(...)`` builds the kind its fields name, so a tool
file written as ``Measure(server=..., metric=...)`` stays what it was.
"""

from __future__ import annotations

import operator
import re
from typing import Annotated, Any, ClassVar, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    StringConstraints,
    Tag,
    model_validator,
)

Reduce = Literal["mean", "sum", "min", "max", "count", "last", "first", "increase", "rises", "age"]
# PromQL's <reduce>_over_time, and its counter functions rate() and increase()
SeriesReduce = Literal["mean", "sum", "min", "max", "count", "last", "rate", "increase"]
Across = Literal["sum", "mean", "min", "max", "count"]
Operator = Literal[">", ">=", "<", "<=", "==", "!="]
OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le,
       "==": operator.eq, "!=": operator.ne}  # fmt: skip
Outcome = Literal["no_data", "true", "false"]
Edge = Literal["(]", "[)", "[]"]  # which window edge is in: "(]" is t-window < time <= t
AgeUnit = Literal["minutes", "hours", "days"]

REDUCES: tuple[str, ...] = get_args(Reduce)
SERIES_REDUCES: tuple[str, ...] = get_args(SeriesReduce)
COUNTER_REDUCES = ("rate", "increase")  # PromQL's own functions, with its extrapolation
AGGREGATES = ("mean", "sum", "min", "max")  # what a rows measurement with columns reduces by
ACROSS: tuple[str, ...] = get_args(Across)
OPERATORS: tuple[str, ...] = get_args(Operator)
OUTCOMES: tuple[str, ...] = get_args(Outcome)
EDGES: tuple[str, ...] = get_args(Edge)
AGE_UNITS = {"minutes": 60.0, "hours": 3600.0, "days": 86400.0}
# PromQL's names (the Prometheus data model): a metric's and a label's. A series measurement's
# names go into the query's text (its label values go in quoted), so nothing else may pass.
METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")

# Numbers stay the type they were written in (15 stays 15, never 15.0), so a spec's JSON form
# round-trips byte for byte; a bool or a numeric string is not a number.
Number = StrictInt | StrictFloat
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Scalar = StrictStr | StrictInt | StrictFloat | StrictBool
Param = Number | Text  # a number, or a site parameter's name (``ctx.params``)

FROZEN = ConfigDict(extra="forbid", frozen=True)


class Keep(BaseModel):
    """Keep only the series whose own value passes ``value <op> threshold`` (a spread)."""

    model_config = FROZEN
    op: Operator
    threshold: Param

    def __init__(self, *args: Any, **data: Any) -> None:
        # ``Keep(">", "idle_pct_threshold")``: how the library's tool files write it
        super().__init__(**dict(zip(("op", "threshold"), args, strict=False)), **data)


class Measure(BaseModel):
    """One number read through MCP: the base of the three kinds. ``Measure(**fields)`` builds
    the kind ``fields`` name (``metric``: series, ``table``: rows, ``tool``: field)."""

    model_config = FROZEN
    kind: ClassVar[str]

    def __new__(cls, *args: Any, **data: Any) -> Any:
        if cls is Measure:
            tag = measure_kind(data)
            if tag is None:
                from sopgraph.tools.spec.errors import SpecError

                raise SpecError(f"Measure: {NO_KIND}")
            cls = KINDS[tag]
        return super().__new__(cls)


class SeriesMeasure(Measure):
    """``<reduce>_over_time`` of the series matching ``match`` over the ``minutes`` before the
    input's time (``rate`` and ``increase``: PromQL's counter functions of those names, resets
    and extrapolation as Prometheus has them), then ``across`` the matching series (after
    ``keep``). ``sum_by`` sums the series per those labels in the query (``sum by (job)
    (...)``) before ``across``; ``quantile`` q reads a histogram: ``histogram_quantile(q, sum
    by (le, ...) (rate(<metric>_bucket[...])))``. With ``per``, each
    series is first divided by the same-labelled series of the metric ``per`` read the same way
    (a per-station rate; a ``per`` series with no value or 0 is dropped, a missing numerator
    series counts 0), and ``scale`` multiplies each (a ratio compared in percent: 100)."""

    kind: ClassVar[str] = "series"
    server: Text
    metric: str
    match: dict[str, str] = {}
    across: Across = "sum"
    keep: Keep | None = None
    per: str | None = None
    scale: Number = 1
    minutes: Param | None = None  # the window (or a formula over site parameters)
    offset_minutes: Number = 0  # the window ends this long before the input's time
    reduce: SeriesReduce = "mean"
    default: Number | None = None  # the value when there is none (else the check's `missing`)
    missing: Outcome | None = None  # the verdict when this one has no value and no default
    sum_by: tuple[str, ...] = ()  # PromQL's `sum by (...)` of the series before `across`
    quantile: Number | None = None  # histogram_quantile of the metric's `_bucket` rates

    @model_validator(mode="after")
    def _promql(self) -> SeriesMeasure:
        bad = [x for x in self.sum_by if not LABEL_NAME.fullmatch(x) or x == "le"]
        if bad:
            raise ValueError(f"sum_by: {', '.join(map(repr, bad))} is not a label to sum by")
        if self.quantile is not None:
            if not 0 <= self.quantile <= 1:
                raise ValueError(f"quantile {self.quantile}: give a number from 0 to 1")
            if self.reduce != "rate":
                raise ValueError(
                    "quantile reads the rate of a histogram's buckets: give reduce rate"
                )
            if self.per:
                raise ValueError("quantile with per: give one of them")
        return self


class RowsMeasure(Measure):
    """``reduce`` of ``column`` over the rows matching ``where`` whose ``time_column`` falls in
    the window (``edge``), or whose ``open_at`` interval holds the input's time. ``age`` with
    no window reads the rows up to the input's time (work logged after it has not happened yet).

    ``min_count`` (a number or a site parameter): fewer values than this in the window (non-null
    ``column`` values, rows for a count of rows, counter steps for increase/rises) is no value.
    ``rises``: like ``increase``, but the number of counter steps above 0. With ``columns``,
    each column is reduced (``column`` and each entry may be a ``$name``, a lookup's value), the
    non-null ones kept (after ``keep``) and ``across`` taken of them, like a metric's series."""

    kind: ClassVar[str] = "rows"
    server: Text
    across: Across = "sum"
    keep: Keep | None = None
    table: Text
    column: str | None = None  # None with reduce "count": count(*), the rows
    columns: tuple[str, ...] = ()  # several columns, each reduced, then `across` them
    where: dict[str, Any] = {}
    time_column: str | None = None
    open_at: tuple[str, str] | None = None  # (start, end): start <= t and (end null or > t)
    minutes: Param | None = None
    offset_minutes: Number = 0
    edge: Edge = "(]"
    reduce: Reduce = "mean"
    step_minutes: Number = 5  # increase: the baseline row is at most this much older
    age_unit: AgeUnit = "days"
    default: Number | None = None
    missing: Outcome | None = None
    min_count: Param | None = None


class FieldMeasure(Measure):
    """A field of the record ``tool`` serves, called with ``args`` (``$name``: an input field
    or a lookup). ``field`` is the field's name (``a.b`` reads a nested one). With ``equals``,
    ``one_of`` or ``within_days`` the number is 1 when the test holds, else 0; with none of
    them it is the field's own value, which must be a number. ``within_days`` (a number or a
    site parameter) compares the field's time with ``of``: ``$timestamp`` (the default, the
    input's time) or another ``$name``, or a plain name: another field of the same record.
    No record, or the field absent or null, is no value (``default``, else ``missing``); a tool
    that fails is an error, never a verdict."""

    kind: ClassVar[str] = "field"
    server: Text
    tool: Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
    args: dict[str, Any] = {}
    field: Text
    equals: Scalar | None = None
    one_of: tuple[Scalar, ...] | None = None
    within_days: Param | None = None
    of: Text = "$timestamp"
    default: Number | None = None
    missing: Outcome | None = None

    @model_validator(mode="after")
    def _one_test(self) -> FieldMeasure:
        tests = [n for n in ("equals", "one_of", "within_days") if getattr(self, n) is not None]
        if len(tests) > 1:
            raise ValueError(f"give one of equals, one_of, within_days, not {' and '.join(tests)}")
        return self


KINDS: dict[str, type[Measure]] = {"series": SeriesMeasure, "rows": RowsMeasure,
                                   "field": FieldMeasure}  # fmt: skip
NO_KIND = "give a metric (a series), a table (rows) or a tool (a field of a record)"


def measure_kind(value: Any) -> str | None:
    """The kind of a measurement, from the key its JSON form has (None: it names none)."""
    if isinstance(value, Measure):
        return value.kind
    if not isinstance(value, dict):
        return None
    if "tool" in value:
        return "field"
    if value.get("metric"):
        return "series"
    return "rows" if value.get("table") else None


AnyMeasure = Annotated[
    Annotated[SeriesMeasure, Tag("series")]
    | Annotated[RowsMeasure, Tag("rows")]
    | Annotated[FieldMeasure, Tag("field")],
    Discriminator(measure_kind, custom_error_type="measure_kind", custom_error_message=NO_KIND),
]
