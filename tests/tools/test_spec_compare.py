"""Where a made spec departs from a reference spec (the tool-maker evaluation's "why")."""

from __future__ import annotations

from sopgraph.tools.spec.compare import differences

RATIO = {
    "measures": {
        "errors": {"server": "robotics", "metric": "pick_errors", "minutes": 15, "reduce": "sum"},
        "picks": {"server": "robotics", "metric": "pick_attempts", "minutes": 15, "reduce": "sum"},
    },
    "value": "errors / picks",
    "scale": 100,
    "op": ">",
    "threshold": "pick_error_pct_threshold",
}


def test_the_same_spec_under_other_measurement_names_does_not_differ():
    renamed = {
        **RATIO,
        "measures": {"a": RATIO["measures"]["errors"], "b": RATIO["measures"]["picks"]},
        "value": "a / b",
    }
    assert differences(renamed, RATIO) == []
    assert differences(RATIO, RATIO) == []


def test_each_departure_is_named_by_what_it_reads():
    made = {
        "measures": {
            "a": {"server": "robotics", "metric": "pick_errors", "minutes": 30, "reduce": "mean"}
        },
        "value": "a",
        "op": ">=",
        "threshold": "pick_error_pct_threshold",
        "missing": "false",
    }
    got = differences(made, RATIO)
    assert got == [
        "does not read pick_attempts",
        "value pick_errors (library: pick_errors / pick_attempts)",
        "scale 1 (library: 100)",
        "op >= (library: >)",
        "missing false (library: no_data)",
        "pick_errors minutes 30 (library: 15)",
        "pick_errors reduce mean (library: sum)",
    ]


def test_rows_filters_and_lookups_are_compared():
    ref = {
        "measures": {
            "f": {"server": "ops", "table": "tickets", "where": {"site": "$site", "equipment_id": "$robot"},
                  "open_at": ["opened_at", "closed_at"], "reduce": "count"},
        },
        "lookups": {"robot": {"server": "ops", "table": "stations", "column": "robot_id",
                              "where": {"site": "$site", "station": "$station"}}},
        "value": "f", "op": ">", "threshold": 0, "verdict_threshold": None,
    }  # fmt: skip
    made = {
        "measures": {"x": {"server": "ops", "table": "tickets", "where": {"site": "$site"},
                           "time_column": "opened_at", "minutes": 30, "reduce": "count"}},
        "value": "x", "op": ">", "threshold": 0,
    }  # fmt: skip
    got = differences(made, ref)
    assert "does not look up stations.robot_id" in got
    assert "tickets.* where {site: $site} (library: {site: $site, equipment_id: $robot})" in got
    assert "tickets.* open_at None (library: ('opened_at', 'closed_at'))" in got
    assert "tickets.* minutes 30 (library: None)" in got


def test_a_source_read_twice_is_numbered_in_both_specs():
    now = {"server": "robotics", "metric": "units_inducted", "minutes": 60, "reduce": "sum"}
    before = {**now, "offset_minutes": 60}
    ref = {"measures": {"now": now, "before": before}, "value": "(before - now) / before",
           "scale": 100, "op": ">", "threshold": "drop_pct"}  # fmt: skip
    made = {"measures": {"a": {**now, "reduce": "last"}}, "value": "a", "scale": 100, "op": ">",
            "threshold": "drop_pct"}  # fmt: skip
    assert differences(made, ref) == [
        "does not read units_inducted#2",
        "value units_inducted#1 (library: (units_inducted#2 - units_inducted#1) / units_inducted#2)",
        "units_inducted#1 reduce last (library: sum)",
    ]  # the one reading is matched with the library's first, not reported as another source
