"""The one typed Check (issue 52): measurements are a discriminated union told apart by the key
the stored JSON form already has, errors are one line naming the field's path, and the JSON
Schema in docs/check.schema.json is the model's, which every library spec passes."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from spec_library import library_checks

from sopgraph.cli import main
from sopgraph.tools.spec import (
    Check,
    FieldMeasure,
    Keep,
    Measure,
    RowsMeasure,
    SeriesMeasure,
    SpecError,
)

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "docs" / "check.schema.json"
SERIES = {"server": "robotics", "metric": "station_idle_pct", "match": {"site": "$site"},
          "minutes": 15}  # fmt: skip
ROWS = {"server": "ops", "table": "tickets", "where": {"site": "$site"},
        "open_at": ["opened_at", "closed_at"], "reduce": "count"}  # fmt: skip
FIELD = {"server": "it", "tool": "get_ticket", "args": {"ticket_id": "$ticket_id"},
         "field": "status", "one_of": ["open", "in_progress"]}  # fmt: skip


def _check(measure: dict, **more) -> dict:
    return {"measures": {"m": measure}, "value": "m", "op": ">", "threshold": 0, **more}


@pytest.mark.parametrize(
    ("measure", "kind"), [(SERIES, SeriesMeasure), (ROWS, RowsMeasure), (FIELD, FieldMeasure)]
)
def test_each_kind_loads_from_the_key_it_has_and_writes_the_same_json(measure, kind):
    check = Check.from_dict(_check(measure))
    assert type(check.measures["m"]) is kind and check.measures["m"].kind == kind.kind
    assert check.to_dict() == _check(measure)  # no `kind` key, defaults left out
    # byte for byte (the fields in the model's order, as every stored spec writes them)
    assert json.dumps(check.to_dict()) == json.dumps(_check(measure))
    assert type(Measure(**measure)) is kind  # how a tool file builds one


def test_numbers_keep_the_type_they_were_written_in():
    check = Check.from_dict(_check({**SERIES, "minutes": 15, "scale": 0.5}, scale=100))
    dumped = json.dumps(check.to_dict())
    assert '"minutes": 15}' in dumped and '"scale": 0.5' in dumped and '"scale": 100' in dumped


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (_check({"server": "robotics", "minutes": 15}),
         "measures.m: give a metric (a series), a table (rows) or a tool (a field of a record)"),
        (_check({**SERIES, "colour": "red"}),
         "measures.m: unknown field 'colour'; the fields are server, metric, match,"),
        (_check({**SERIES, "table": "t"}), "measures.m: unknown field 'table'"),
        (_check({**ROWS, "per": "x"}), "measures.m: unknown field 'per'"),
        (_check({**SERIES, "reduce": "median"}),
         "measures.m.reduce: 'median' is not one of mean, sum, min, max, count, last"),
        (_check({**SERIES, "reduce": "rises"}), "measures.m.reduce: 'rises' is not one of"),
        (_check({**SERIES, "minutes": True}), "measures.m.minutes: expected a number or "),
        (_check({**SERIES, "keep": {"op": ">", "threshold": 3, "limit": 3}}),
         "measures.m.keep: unknown field 'limit'; the fields are op, threshold"),
        (_check(SERIES, lookups={"r": {"server": "ops", "table": "t"}}),
         "lookups.r.column: missing"),
        (_check({**FIELD, "equals": "open"}),
         "measures.m: give one of equals, one_of, within_days, not equals and one_of"),
        (_check({**FIELD, "tool": "get ticket"}), "measures.m.tool: 'get ticket' is not a plain"),
        (_check({**FIELD, "field": "  "}), "measures.m.field: expected a non-empty string"),
        (_check(SERIES, threshold=None), "threshold: expected "),
        ([], "spec: expected an object, got list"),
    ],
)  # fmt: skip
def test_a_bad_check_is_one_line_naming_the_path(spec, message):
    with pytest.raises(SpecError) as err:
        Check.from_dict(spec)
    assert str(err.value).startswith(message), str(err.value)
    assert "\n" not in str(err.value)


def test_a_check_is_frozen_and_keep_takes_its_fields_in_order():
    check = Check.from_dict(_check({**SERIES, "keep": {"op": ">", "threshold": "x"}}))
    with pytest.raises(ValueError, match="frozen"):
        check.value = "2 * m"  # type: ignore[misc]
    assert check.measures["m"].keep == Keep(">", "x")


def _enums_sorted(node):
    """The schema with each ``enum`` as a set: pydantic lists a ``Literal``'s values in the order
    of an equal ``Literal`` it met first (``["true", "false", "no_data"]`` elsewhere), so the
    order depends on what was imported before; JSON Schema gives it no meaning."""
    if isinstance(node, dict):
        return {
            k: (sorted(v, key=str) if k == "enum" else _enums_sorted(v)) for k, v in node.items()
        }
    if isinstance(node, list):
        return [_enums_sorted(v) for v in node]
    return node


def test_the_committed_schema_is_the_models(capsys):
    assert main(["schema", "check"]) == 0
    made = json.loads(capsys.readouterr().out)
    assert _enums_sorted(json.loads(SCHEMA.read_text(encoding="utf-8"))) == _enums_sorted(made), (
        "docs/check.schema.json is stale: run `sopgraph schema check -o docs/check.schema.json`"
    )


def test_every_library_spec_passes_the_schema_and_a_bad_one_does_not():
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text(encoding="utf-8")))
    checks = library_checks()
    assert len(checks) > 30
    for node, check in checks.items():
        assert not list(validator.iter_errors(check.to_dict())), node
    for spec in (_check(FIELD), _check(ROWS)):
        assert not list(validator.iter_errors(spec))
    for bad in (_check({**SERIES, "table": "t"}), _check({**FIELD, "reduce": "mean"}),
                _check({**SERIES, "reduce": "median"})):  # fmt: skip
        assert list(validator.iter_errors(bad)), bad


def _test(value: str) -> dict:
    return {"server": "crm", "tool": "get_case", "args": {"case_id": "$case_id"},
            "field": "status", "equals": value}  # fmt: skip


@pytest.mark.parametrize(
    ("value", "op", "threshold", "decides"),
    [
        ("a", ">=", 0, False),  # 1 or 0 is always >= 0
        ("a", "<", 2, False),
        ("a", ">", 0, True),
        ("a", "==", 1, True),
        ("a", ">=", "min_open", True),  # a parameter's value is the site's: not known here
        ("abs(a - b)", "<=", 0, True),
        ("a + b", "<=", 2, False),
    ],
)
def test_a_comparison_its_tests_cannot_change_is_refused(value, op, threshold, decides):
    spec = {"value": value, "measures": {"a": _test("open"), "b": _test("closed")}, "op": op,
            "threshold": threshold}  # fmt: skip
    if decides:
        Check.from_dict(spec).validate()
        return
    with pytest.raises(SpecError, match=r"whatever the tests give .*: the check decides nothing"):
        Check.from_dict(spec)
