"""A spec's PromQL names are checked when the spec loads (issue 53, finding 4): a metric or
label name goes into the query's text, so one that is not a PromQL name (``up or vector(1)``,
``x"} or up{a="``) could change what the query asks. Label values were and stay quoted."""

from __future__ import annotations

import pytest

from sopgraph.tools.spec import Check, Measure, SpecError, tool
from sopgraph.tools.spec.series import query_text


def _spec(**measure) -> dict:
    idle = {"server": "robotics", "metric": "station_idle_pct", "minutes": 15,
            "match": {"site": "$site"}} | measure  # fmt: skip
    return {"measures": {"idle": idle}, "value": "idle", "op": ">", "threshold": 25}


@pytest.mark.parametrize(
    ("change", "field", "name", "rule"),
    [
        ({"metric": "up or vector(1)"}, "measures.idle.metric", "up or vector(1)",
         "[a-zA-Z_:][a-zA-Z0-9_:]*"),
        ({"metric": "up{}"}, "measures.idle.metric", "up{}", "[a-zA-Z_:][a-zA-Z0-9_:]*"),
        ({"metric": "1up"}, "measures.idle.metric", "1up", "[a-zA-Z_:][a-zA-Z0-9_:]*"),
        ({"per": "up) or (vector(1)"}, "measures.idle.per", "up) or (vector(1)",
         "[a-zA-Z_:][a-zA-Z0-9_:]*"),
        ({"match": {'x"} or up{a="': "1"}}, "measures.idle.match", 'x"} or up{a="',
         "[a-zA-Z_][a-zA-Z0-9_]*"),
        ({"match": {"job:name": "1"}}, "measures.idle.match", "job:name",
         "[a-zA-Z_][a-zA-Z0-9_]*"),
        ({"match": {"site": "$site", "": "1"}}, "measures.idle.match", "", "[a-zA-Z_][a-zA-Z0-9_]*"),
    ],
)  # fmt: skip
def test_a_name_that_is_not_promql_is_refused_at_load_in_one_line(change, field, name, rule):
    with pytest.raises(SpecError) as err:
        Check.from_dict(_spec(**change))
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith(f"{field}: {name!r} is not a PromQL") and rule in text
    with pytest.raises(SpecError):  # a tool file's spec is checked the same way
        tool(_spec(**change))


def test_a_spec_built_in_python_is_checked_when_it_becomes_a_tool():
    check = Check(
        measures={"idle": Measure(server="robotics", metric="up or vector(1)", minutes=15)},
        value="idle", op=">", threshold=25,
    )  # fmt: skip
    with pytest.raises(SpecError, match=r"measures\.idle\.metric: 'up or vector\(1\)'"):
        tool(check)


def test_valid_names_build_the_same_query_as_before():
    check = Check.from_dict(_spec(match={"site": "$site", "__name__": "station_idle_pct"}))
    q = query_text(check.measures["idle"], {"site": "BFI4"})
    assert q == 'avg_over_time(station_idle_pct{site="BFI4",__name__="station_idle_pct"}[15m])'
    recorded = Check.from_dict(_spec(metric="job:idle_pct:avg5m", per="job:attempts:avg5m"))
    assert query_text(recorded.measures["idle"], {"site": "BFI4"}) == (
        'avg_over_time(job:idle_pct:avg5m{site="BFI4"}[15m])'
    )


def test_a_label_value_is_a_quoted_promql_string_whatever_it_holds():
    check = Check.from_dict(_spec(match={"site": "$site", "station": 'x"} or up{a="\\'}))
    q = query_text(check.measures["idle"], {"site": '"} or vector(1) or up{a="'})
    assert q == (
        'avg_over_time(station_idle_pct{site="\\"} or vector(1) or up{a=\\"",'
        'station="x\\"} or up{a=\\"\\\\"}[15m])'
    )
