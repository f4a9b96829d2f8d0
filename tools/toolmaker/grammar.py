"""The tool-maker's output grammar, built per node: a spec that can only name what exists.

``spec_model`` returns a narrowing of the spec's model (``sopgraph.tools.spec.Check``): the
same fields, fewer of them, each enumeration the Check's own (its operators, outcomes,
reductions) or read from the catalog and the SOP: the node's servers, their metrics or tables,
each table's own columns and its column families (read across them, like a metric's series),
the labels the metrics carry that the run input keys on, the typed records of tools the run
input's fields can call and their fields' declared values, the SOP's parameter names, the
input's fields.
DSPy sends its JSON schema as the response format; llama.cpp compiles that into a grammar, so
every token the model samples keeps the reply a spec of this node's world. A candidate may
still be wrong (the wrong metric, window or comparison), never unparsable or made up.
"""

from __future__ import annotations

import functools
import operator
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, create_model

from sopgraph.tools.spec.measures import AGGREGATES
from sopgraph.tools.spec.model import Check, FieldMeasure, Lookup, RowsMeasure, SeriesMeasure
from sopgraph.tools.toolmaker.data_catalog import DataCatalog

# The measurements are named a and b in the grammar (a required, b optional): a JSON schema's
# minProperties is not enforced by llama.cpp's grammar, and an empty `measures` is the easiest
# reply. Library demonstrations are shown with the same names (``demos.canonical``).
FORMULAS = ("a", "a / b", "a - b", "b - a", "a + b", "(a - b) / b", "(b - a) / b", "max(a, b)",
            "min(a, b)", "abs(a - b)")  # fmt: skip
WINDOWS = (5, 10, 15, 20, 30, 45, 60, 120, 180, 240, 360, 720, 1440, 10080)
SCALES = (1, 100, 0.01)  # a value as read, a fraction as a percent, a percent as a fraction
STRICT = ConfigDict(extra="forbid")


def choices(model: type[BaseModel], name: str) -> tuple[Any, ...]:
    """The values the Check's model allows in field ``name`` of ``model`` (a ``Literal``)."""
    return get_args(model.model_fields[name].annotation)


# PromQL's counter functions: no demonstration of the library shows them (all its metrics are
# gauges), as for the rows reductions below
SERIES_REDUCES = tuple(r for r in choices(SeriesMeasure, "reduce") if r not in ("rate", "increase"))
# the grammar leaves out the reductions no demonstration of the library shows
ROW_REDUCES = tuple(r for r in choices(RowsMeasure, "reduce") if r not in ("first", "rises"))
ACROSS = choices(RowsMeasure, "across")
OPERATORS = choices(Check, "op")
OUTCOMES = choices(Check, "missing")
AGE_UNITS = choices(RowsMeasure, "age_unit")


def bound_fields(sop: Any, entry_type: str | None = None) -> list[str]:
    """The run input's fields a spec may bind (``$field``), by name, so the grammar does not
    depend on the order the SOP declares them in: those a run of ``entry_type`` carries
    (required, or required by that type); with no type, those required by any. An optional
    field may be absent, and a spec binding it would fail."""
    if entry_type is not None:
        return sorted(n for n, f in sop.input.items() if f.required_by(entry_type))
    return sorted(n for n, f in sop.input.items() if f.required or f.required_for)


def _lit(values: list[Any] | tuple[Any, ...]) -> Any:
    return Literal[tuple(values)]  # type: ignore[valid-type]


def narrow(of: type[BaseModel], name: str, **fields: Any) -> type[BaseModel]:
    """A grammar model of ``of``: only ``fields`` (each a field of ``of``), each type narrowed
    to what this node may name. A field ``of`` does not have is a bug, not a reply."""
    unknown = sorted(set(fields) - set(of.model_fields))
    if unknown:
        raise TypeError(f"{name}: {', '.join(unknown)} is not a field of {of.__name__}")
    return create_model(name, __config__=STRICT, **fields)


def _name(*parts: str) -> str:
    return "".join(p.title().replace("_", "") for p in parts)


def hinted(
    data: DataCatalog, hints: list[str]
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The metrics and tables a node's data hints name (``server.metric``, ``server.table``
    or ``server.column``), per server; a server none of whose items is named keeps them all."""
    metrics, tables = {}, {}
    for server, names in data.metrics.items():
        named = [m for m in names if f"{server}.{m}" in hints]
        metrics[server] = named or names
    for server, by_table in data.tables.items():
        named = [
            t for t, cols in by_table.items()
            if f"{server}.{t}" in hints or any(f"{server}.{c}" in hints for c in cols)
        ]  # fmt: skip
        tables[server] = named or list(by_table)
    return metrics, tables


def field_measures(
    data: DataCatalog, server: str, input_fields: list[str], hints: list[str]
) -> list[type[BaseModel]]:
    """One narrowing of ``FieldMeasure`` per field of each record tool of ``server`` the run
    input can call (the hinted ones, when the hints name any): its arguments bound to the input
    fields of their names, and a field with declared values tested for one of them."""
    tools = data.record_tools(server, input_fields)
    named = [t for t in tools if f"{server}.{t}" in hints]
    out = []
    for tool in named or list(tools):
        args = create_model(
            _name("args", server, tool), __config__=STRICT,
            **{a: (_lit([f"${a}"]), ...) for a in data.arguments.get(f"{server}.{tool}", [])},
        )  # fmt: skip
        for name, declared in tools[tool].items():
            test: dict[str, Any] = {}
            if declared.get("enum"):
                test["equals"] = (_lit(declared["enum"]), ...)
            elif declared.get("type") not in ("number", "integer"):
                test["equals"] = (str, ...)  # a field with no number: a test of its value
            out.append(
                narrow(
                    FieldMeasure,
                    _name("field", server, tool, name),
                    server=(_lit([server]), ...),
                    tool=(_lit([tool]), ...),
                    args=(args, ...),
                    field=(_lit([name]), ...),
                    **test,
                )  # fmt: skip
            )
    return out


def hinted_families(
    data: DataCatalog, server: str, table: str, hints: list[str]
) -> list[list[str]]:
    """The column families of ``table`` (``DataCatalog.families``) a node may read: none when
    its hints name one of the table's columns (the hint pins the column), those whose shared
    words hold every word of a hint that names a group (``plant.zone_load``: the
    ``zone_*_load_ratio`` columns), else (the table named, or nothing of it) all of them."""
    families = data.families(table)
    tables = data.tables.get(server, {})
    named = [h.split(".", 1)[1] for h in hints if h.startswith(f"{server}.")]
    if any(n in tables.get(table, []) for n in named):
        return []
    groups = [n for n in named if n not in tables]  # neither a column nor a table: a group
    chosen = [
        f for f in families
        if any(set(g.split("_")) <= set(f[0].split("_")) & set(f[1].split("_")) for g in groups)
    ]  # fmt: skip
    return chosen or families


def family_measures(
    data: DataCatalog, server: str, table: str, where: type[BaseModel], times: list[str],
    hints: list[str],
) -> list[type[BaseModel]]:  # fmt: skip
    """One narrowing of ``RowsMeasure`` per column family the node may read
    (``hinted_families``): ``columns`` any of the family's, each reduced over the window, then
    ``across`` them (the fullest of several zones: ``max``)."""
    return [
        narrow(
            RowsMeasure,
            _name("rows", server, table, *family[0].split("_"), "columns"),
            server=(_lit([server]), ...),
            table=(_lit([table]), ...),
            columns=(list[_lit(family)], ...),  # type: ignore[misc]
            where=(where, ...),
            time_column=(_lit(times) | None, ...),
            minutes=(_lit(WINDOWS) | None, ...),
            reduce=(_lit(AGGREGATES), ...),
            across=(_lit(ACROSS), ...),
            default=(float | None, None),
        )  # fmt: skip
        for family in hinted_families(data, server, table, hints)
    ]


def spec_model(
    data: DataCatalog,
    params: list[str],
    input_fields: list[str],
    hints: list[str] | None = None,
    ratio: bool = False,
) -> type[BaseModel]:
    """The reply ``{"spec": ...}`` for one node: a spec with every name an enumeration, in
    one of two shapes (value ``a`` over one measurement, or a formula over ``a`` and ``b``),
    every field in the order the library's demonstrations show it. With ``hints`` (the node's
    ``data:``), measurements read only the named metrics, tables and record tools; lookups any
    table. A
    series measurement matches on the labels its server's metrics carry that are fields of
    the run input (``DataCatalog.keyed_labels``), each bound to an input field. With ``ratio``,
    only the part over the whole as a percentage: two measurements, value ``a / b``, scale 100
    (a count's repair against a percentage: ``check_repair``)."""
    read_metrics, read_tables = hinted(data, hints or [])
    refs = _lit([f"${f}" for f in input_fields]) if input_fields else str
    measures: list[type[BaseModel]] = []
    for server, metrics in read_metrics.items():
        if not metrics:
            continue
        match = create_model(
            _name("match", server), __config__=STRICT,
            **{label: (refs | None, None) for label in data.keyed_labels(server, input_fields)},
        )  # fmt: skip
        measures.append(
            narrow(
                SeriesMeasure,
                _name("series", server),
                server=(_lit([server]), ...),
                metric=(_lit(metrics), ...),
                match=(match, ...),
                minutes=(_lit(WINDOWS), ...),
                reduce=(_lit(SERIES_REDUCES), ...),
            )  # fmt: skip
        )
    lookups: list[type[BaseModel]] = []
    for server, tables in data.tables.items():
        for table, cols in tables.items():
            col = _lit(cols)
            times = data.time_columns(table) or cols
            where = create_model(
                _name("where", server, table), __config__=STRICT,
                **{c: (str | None, None) for c in cols},
            )  # fmt: skip
            if table in read_tables.get(server, []):
                measures.append(
                    narrow(
                        RowsMeasure,
                        _name("rows", server, table),
                        server=(_lit([server]), ...),
                        table=(_lit([table]), ...),
                        # required, null allowed: the model decides each, in this order
                        column=(col | None, ...),
                        where=(where, ...),
                        time_column=(_lit(times) | None, ...),
                        minutes=(_lit(WINDOWS) | None, ...),
                        reduce=(_lit(ROW_REDUCES), ...),
                        open_at=(list[_lit(times)] | None, None),  # type: ignore[misc]
                        age_unit=(_lit(AGE_UNITS) | None, None),
                        default=(float | None, None),
                    )  # fmt: skip
                )
                measures += family_measures(data, server, table, where, times, hints or [])
            lookups.append(
                narrow(
                    Lookup,
                    _name("lookup", server, table),
                    server=(_lit([server]), ...),
                    table=(_lit([table]), ...),
                    column=(col, ...),
                    where=(where, ...),
                )  # fmt: skip
            )
    for server in data.records:
        measures += field_measures(data, server, input_fields, hints or [])
    if not measures:
        raise ValueError(
            "the node's servers list no metrics, tables or typed records (list_metrics, "
            "list_tables, a tool's outputSchema): a spec has nothing to read"
        )
    measure = functools.reduce(operator.or_, measures)
    threshold = (_lit(params) | float) if params else float
    lookup = None
    if lookups:
        lookup = functools.reduce(operator.or_, lookups)

    def shape(
        name: str, formulas: tuple[str, ...], two: bool, scales: tuple[float, ...] = SCALES
    ) -> type[BaseModel]:
        # the value comes first: choosing it chooses one measurement or two
        named = create_model(
            f"{name}Measures", __config__=STRICT, a=(measure, ...),
            **({"b": (measure, ...)} if two else {}),
        )  # fmt: skip
        fields: dict[str, Any] = {
            "value": (_lit(formulas), ...),
            "measures": (named, ...),
            "scale": (_lit(scales), ...),
            "op": (_lit(OPERATORS), ...),
            "threshold": (threshold, ...),
            "missing": (_lit(OUTCOMES), ...),
        }
        if two:
            fields["zero_division"] = (_lit(OUTCOMES), ...)
        if lookup is not None:
            fields["lookups"] = (dict[str, lookup] | None, None)  # type: ignore[valid-type]
        return narrow(Check, name, **fields)

    if ratio:
        part = shape("PartOfWhole", ("a / b",), True, (100,))
        return create_model("Reply", __config__=STRICT, spec=(part, ...))
    one = shape("OneMeasure", ("a",), False)
    two = shape("TwoMeasures", FORMULAS[1:], True)
    return create_model("Reply", __config__=STRICT, spec=(one | two, ...))


def response_format(model: type[BaseModel]) -> dict[str, Any]:
    """The reply's JSON schema as llama.cpp's server reads it (its ``json_object`` dialect)."""
    schema = model.model_json_schema()
    schema.pop("title", None)
    return {"type": "json_object", "schema": schema}


def as_spec_dict(model: BaseModel | dict[str, Any]) -> dict[str, Any]:
    """The filled model as the spec's JSON form: unset and null fields left out."""
    raw = model.model_dump(exclude_none=True) if isinstance(model, BaseModel) else dict(model)
    if set(raw) == {"spec"}:
        raw = raw["spec"]

    def clean(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items() if x is not None}
        return v

    out = clean(raw)
    if not out.get("lookups"):
        out.pop("lookups", None)
    return out
