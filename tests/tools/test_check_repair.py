"""What sends a drawn Check back before it votes: a comparison its value's range decides."""

from __future__ import annotations

import pytest

from sopgraph.tools.toolmaker.check_repair import decided

COUNT = {"server": "s", "table": "t", "where": {}, "reduce": "count"}
MEAN = {"server": "s", "table": "t", "column": "c", "where": {}, "reduce": "mean"}


def check(op, threshold, measure=COUNT, value="a", scale=1):
    return {"value": value, "measures": {"a": measure, "b": COUNT}, "scale": scale, "op": op,
            "threshold": threshold}  # fmt: skip


@pytest.mark.parametrize(
    ("op", "threshold", "says"),
    [(">=", 0, "true"), (">", -1, "true"), ("<", 0, "false"), ("<=", -0.5, "false")],
)
def test_a_count_compared_outside_its_range_is_decided(op, threshold, says):
    why = decided(check(op, threshold))
    assert why is not None and f"this comparison is {says} before any data is read" in why


@pytest.mark.parametrize(
    "spec",
    [
        check(">", 0),  # some count is above 0, some is not: the data decides
        check("<=", 0),  # "no rows" is a question the data answers
        check(">=", 0, measure=MEAN),  # a mean may be below 0
        check(">=", "min_count"),  # a parameter: the run binds its value
        check(">=", 0, value="a - b"),  # a difference of counts may be below 0
        check(">=", 0, measure={**COUNT, "default": -1}),  # no rows reads as -1
        None,
    ],
)
def test_a_comparison_the_data_can_decide_is_not(spec):
    assert decided(spec) is None
