"""The spec form: lenient reading of a small model's fields, checks, and the compiled file."""

from __future__ import annotations

import types

import pytest

from sopgraph.tools.toolmaker.maker import spec_from
from sopgraph.tools.toolmaker.spec import SpecError, ToolSpec, check_spec, compile_spec
from sopgraph.tools.toolmaker.validate import check_source

SERVERS = {"robotics": ["execute_query"], "warehouse": ["execute_query", "list_tables"]}
PROMQL = 'avg_over_time(station_idle_pct{site="{site}",station="{station}"}[15m])'


def test_fields_as_the_live_model_wrote_them_are_read_as_meant():
    # seen live: HTML entities, synonyms, a fenced query, a braced parameter name
    pred = types.SimpleNamespace(
        server="robotics", query="```promql\n" + PROMQL.replace('"', "&#34;") + "\n```",
        column="", aggregate="avg", operator="&gt;", threshold="{idle_pct_threshold}",
        empty="no data",
    )  # fmt: skip
    spec = spec_from(pred)
    assert (spec.query, spec.aggregate, spec.operator) == (PROMQL, "mean", ">")
    assert (spec.threshold, spec.empty) == ("idle_pct_threshold", "no_data")


def test_unknown_operator_is_a_spec_error_naming_the_field():
    pred = types.SimpleNamespace(server="robotics", query="x", column="", aggregate="first",
                                 operator="about", threshold="1", empty="no_data")  # fmt: skip
    with pytest.raises(SpecError, match="operator"):
        spec_from(pred)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"server": "prometheus"}, "server: 'prometheus' is not one of robotics, warehouse"),
        ({"tool": "drop_table"}, "tool: robotics has no tool 'drop_table'"),
        ({"query": 'x{site="{plant}"}'}, "unknown placeholder {plant}"),
        (
            {"threshold": "idle_max"},
            "threshold: 'idle_max' is neither a number nor a site parameter",
        ),
    ],
)
def test_check_names_what_is_wrong(change, message):
    spec = ToolSpec(server="robotics", query=PROMQL, operator=">", threshold="idle_pct_threshold")
    with pytest.raises(SpecError, match=message.replace("{", r"\{").replace("}", r"\}")):
        check_spec(spec.model_copy(update=change), ["idle_pct_threshold"], SERVERS)


def test_compiled_file_is_a_tool_and_model_strings_cannot_escape_their_literal():
    spec = ToolSpec(server="robotics", query='x"""\nimport os\n"""', operator=">=", threshold="2.5")
    code = compile_spec(spec, "obs_x", 'text with """ quotes', "query", "time")
    assert check_source(code) is None
    compiled = compile(code, "<tool>", "exec")  # parses; nothing of it runs here
    assert "import os" not in [ln.strip() for ln in code.splitlines()]
    assert compiled.co_names.count("os") == 0
    assert "QUERY_ARG, TIME_ARG = 'query', 'time'" in code and "float('2.5')" in code
