"""A sampled Check's scale follows the units the catalog and the SOP text declare."""

from __future__ import annotations

from sopgraph.tools.toolmaker.check_units import (
    declared,
    implied_scale,
    text_settles,
    time_problem,
    unit_problem,
)

UNITS = {
    "fail_pct": "type=gauge; unit=percent; help=share failed (0-100)",
    "errors": "type=gauge; unit=count",
    "attempts": "type=gauge; unit=count",
    "vacuum": "type=gauge; unit=kPa",
    "plain": "type=gauge; help=no unit given",
}
PCT = "failed more than {limit}% of reads"


def check(value: str, scale: int, text_param: str = "limit", **measures: str) -> dict:
    return {
        "value": value,
        "measures": {k: {"server": "s", "metric": m, "reduce": "sum"} for k, m in measures.items()},
        "scale": scale,
        "op": ">",
        "threshold": text_param,
    }


def test_catalog_units_in_the_texts_spelling():
    assert [declared(UNITS[m]) for m in ("fail_pct", "errors", "vacuum", "plain")] == [
        "%", "count", "kPa", None,
    ]  # fmt: skip


def test_a_percentage_against_a_percentage_is_scale_1():
    assert unit_problem(check("a", 1, a="fail_pct"), UNITS, PCT) is None
    why = unit_problem(check("a", 100, a="fail_pct"), UNITS, PCT)
    assert (
        why and why.startswith("scale: the value is already a percentage") and "use scale 1" in why
    )


def test_a_ratio_of_counts_against_a_percentage_is_scale_100():
    assert unit_problem(check("a / b", 100, a="errors", b="attempts"), UNITS, PCT) is None
    why = unit_problem(check("a / b", 1, a="errors", b="attempts"), UNITS, PCT)
    assert why and "a fraction" in why and "use scale 100" in why


def test_a_count_is_never_a_percentage():
    why = unit_problem(check("a", 100, a="errors"), UNITS, PCT)
    assert why and why.startswith("value: the value is a count") and "a / b" in why


def test_like_units_elsewhere_and_what_is_not_declared():
    kpa = "vacuum averaged below {limit} kPa"
    assert unit_problem(check("a", 1, a="vacuum"), UNITS, kpa) is None
    assert "use scale 1" in (unit_problem(check("a", 100, a="vacuum"), UNITS, kpa) or "")
    # nothing declared: a metric with no unit, a count threshold, a table column, a number
    assert unit_problem(check("a", 100, a="plain"), UNITS, PCT) is None
    assert unit_problem(check("a", 100, a="fail_pct"), UNITS, "at least {limit} stations") is None
    rows = {"value": "a", "measures": {"a": {"table": "t", "column": "c", "reduce": "mean"}},
            "scale": 100, "threshold": "limit"}  # fmt: skip
    assert unit_problem(rows, UNITS, PCT) is None
    assert unit_problem({**check("a", 100, a="fail_pct"), "threshold": 5}, UNITS, PCT) is None
    # unlike units in one formula: not ours to say
    assert unit_problem(check("a - b", 100, a="fail_pct", b="vacuum"), UNITS, PCT) is None


def test_unlike_declared_units_are_named():
    why = unit_problem(check("a", 1, a="fail_pct"), UNITS, "vacuum below {limit} kPa")
    assert why == "value: the value is in % (fail_pct: unit percent) and {limit} is in kPa"


def test_the_scale_the_units_imply():
    assert implied_scale(check("a", 100, a="fail_pct"), UNITS, PCT)[0] == 1
    assert implied_scale(check("a / b", 1, a="errors", b="attempts"), UNITS, PCT)[0] == 100
    assert implied_scale(check("a", 100, a="vacuum"), UNITS, "below {limit} kPa")[0] == 1
    # none: a count against a percentage, undeclared units, unlike units
    assert implied_scale(check("a", 1, a="errors"), UNITS, PCT) is None
    assert implied_scale(check("a", 1, a="plain"), UNITS, PCT) is None
    assert implied_scale(check("a", 1, a="fail_pct"), UNITS, "below {limit} kPa") is None


def rows(reduce: str, scale: int = 1, column: str | None = "c", **more) -> dict:
    m = {"table": "t", "column": column, "reduce": reduce, **more}
    return {"value": "a", "measures": {"a": m}, "scale": scale, "threshold": "limit"}


def test_a_threshold_the_text_does_not_state_as_a_percentage_takes_scale_1():
    for text in ("at least {limit} jams", "more than {limit} days ago", "above {limit}"):
        spec, notes = text_settles(rows("sum", 100), text)
        assert spec["scale"] == 1, text
        assert notes == ["scale 100 -> 1: {limit} is not stated as a percentage"]
    # a percentage, however written, keeps its scale; so does a threshold the text never names
    for text in (PCT, "above {limit} percent", "differ by {limit} percentage points", "above 5"):
        assert text_settles(rows("sum", 100), text) == (rows("sum", 100), []), text
    plain = {**rows("sum", 100), "threshold": 5}
    assert text_settles(plain, "at least {limit} jams") == (plain, [])


def test_an_age_is_counted_in_the_unit_of_its_threshold():
    spec, notes = text_settles(rows("age"), "cleaned within the last {limit} hours")
    assert spec["measures"]["a"]["age_unit"] == "hours"
    assert notes == ["age_unit days -> hours: {limit} is in hours"]
    days = rows("age", age_unit="days")
    assert text_settles(days, "replaced more than {limit} days ago") == (days, [])
    # no time unit in the text: the age's unit is left as drawn
    assert text_settles(rows("age"), "more than {limit} repairs") == (rows("age"), [])


def test_a_time_columns_min_or_mean_is_a_time_not_a_number():
    times = {"t": ["delivered_at"]}.get
    why = time_problem(rows("min", column="delivered_at"), times)
    assert why == (
        "measures.a: min of delivered_at is a time, not a number: how long ago it was is "
        "reduce age with time_column delivered_at"
    )
    assert time_problem(rows("age", column=None, time_column="delivered_at"), times) is None
    assert time_problem(rows("max", column="amount"), times) is None
    assert time_problem(rows("count", column="delivered_at"), times) is None
