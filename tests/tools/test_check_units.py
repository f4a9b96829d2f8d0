"""A sampled Check's scale follows the units the catalog and the SOP text declare."""

from __future__ import annotations

from sopgraph.tools.toolmaker.check_units import declared, implied_scale, unit_problem

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
