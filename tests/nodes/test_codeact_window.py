"""The metric and the time a check's text states, and the CodeAct host's hold on them."""

from __future__ import annotations

import ast
import dataclasses
import json
import re

import pytest

from sopgraph.examples import EXAMPLES
from sopgraph.graphs.loader import load_sop
from sopgraph.nodes import codeact_window as cw
from sopgraph.nodes.codeact import CodeActRun, blocked_prefixes, hinted_metrics, hold_code, review
from sopgraph.nodes.codeact_grounding import NO_RECORD, no_record
from sopgraph.prompts.codeact import DemoCall, DemoRun, FunctionSpec, code_grammar, parse_answer

NOW = cw.parse_time("2025-03-17T23:48:03Z")


@pytest.fixture(scope="module")
def triage_texts():
    sop = load_sop(EXAMPLES / "fc_alarm_triage" / "sop.yaml")
    fill = {k: str(v) for k, v in sop.params.items()}  # the text a node's check is run with
    return {nid: re.sub(r"\{(\w+)\}", lambda m: fill[m.group(1)], node.text)
            for nid, node in sop.nodes.items()}  # fmt: skip


@pytest.mark.parametrize(
    ("node", "seconds", "counted", "moment"),
    [
        ("obs_station_idle", 900, True, False),
        ("obs_starvation_sustained", 2700, True, False),  # "of the last 45 minutes"
        ("ct_repeat_robot_faults", 86400, True, False),  # "in the last 24 hours"
        ("ct_standby_capacity_safe", 3600, True, False),  # "in the last hour"
        ("ct_lens_cleaned_recently", 8 * 3600, False, False),  # an age: "within the last"
        ("rc_robot_fault", None, False, True),  # "at the time of the alarm"
        ("ct_robot_ticket_open", None, False, True),
        ("obs_site_throughput_low", None, False, False),  # "the hour before" too: two times
        ("ct_sorter_jam_persistent", None, False, False),  # five-minute intervals
        ("ct_downstage_precondition", None, False, False),
        ("rc_chutes_full", None, False, False),
    ],
)
def test_the_time_is_read_from_the_sop_text(triage_texts, node, seconds, counted, moment):
    text = triage_texts[node]
    assert cw.check_window(text) == seconds
    assert cw.reads_window(text) is counted
    assert cw.states_moment(text) is moment


def test_a_window_check_has_its_query_times_and_ranges_set_to_the_window():
    sql = ("q(sql='SELECT avg(x) FROM t WHERE ts > ? AND ts <= ?', "
           "params=['2025-03-17 23:23:03', '2025-03-17 23:48:03'])")  # fmt: skip
    held, notes = cw.hold_window(sql, NOW, 2700)
    assert "'2025-03-17 23:03:03', '2025-03-17 23:48:03'" in held
    assert notes == ["time 2025-03-17 23:23:03 is not the window's start: 2025-03-17 23:03:03"]
    promql = "q(query='avg_over_time(m{site=\"A\"}[30m])', time=NOW)"
    held, notes = cw.hold_window(promql, NOW, 900)
    assert held == "q(query='avg_over_time(m{site=\"A\"}[15m])', time=NOW)"
    assert notes == ["range [30m] is not the window: [15m]"]
    # the right window, the moment itself and an ISO time keep as they are
    right = "params=['2025-03-17T23:03:03', '2025-03-17 23:48:03'], q='m[45m]'"
    assert cw.hold_window(right, NOW, 2700) == (right, [])
    assert cw.hold_window("q='m[1h]'", NOW, 3600) == ("q='m[1h]'", [])
    assert cw.hold_window("q='m[1d]'", NOW, 86400 * 3)[0] == "q='m[3d]'"


def test_the_review_sends_back_code_that_reads_another_time():
    point = "params=['ONT8', '2025-03-17 23:48:03', '2025-03-17 23:48:03']"
    said = cw.time_problem(point, NOW, 86400, moment=False)
    assert (
        said == "reads no window: the check is about the last 1d, from 2025-03-16 23:48:03 to NOW"
    )
    assert cw.time_problem("q='m{s=\"A\"}[1d]'", NOW, 86400, False) is None
    assert cw.time_problem("start = now - timedelta(hours=24)", NOW, 86400, False) is None
    day = "params=['ONT8', 'fault', '2025-03-16 23:48:03', '2025-03-17 23:48:03']"
    said = cw.time_problem(day, NOW, None, moment=True)
    assert said.startswith("reads from 2025-03-16 23:48:03, but the check is about the moment")
    assert cw.time_problem(point, NOW, None, moment=True) is None
    assert cw.time_problem(day, NOW, 86400, moment=False) is None


def _spec(name: str, server: str, props: list[str]) -> FunctionSpec:
    return FunctionSpec(name=name, server=server, tool=name.split("_", 1)[1],
                        input_schema={"properties": {p: {} for p in props}})  # fmt: skip


SPECS = {
    "robotics_execute_query": _spec("robotics_execute_query", "robotics", ["query", "time"]),
    "robotics_list_metrics": _spec("robotics_list_metrics", "robotics", ["match"]),
    "ops_execute_query": _spec("ops_execute_query", "ops", ["sql", "params"]),
}


def test_a_promql_function_starts_with_a_hinted_metric_by_grammar():
    import llama_cpp

    metrics = hinted_metrics(SPECS, ["robotics.suction_vacuum_kpa", "ops.maintenance_log"])
    assert metrics == {"robotics_execute_query": ["suction_vacuum_kpa"]}
    assert hinted_metrics(SPECS, ["ops.equipment_states", "ops.tickets.opened_at"]) == {}
    grammar = code_grammar(list(SPECS), metrics)
    assert 'fn ::= "ops_execute_query" | "robotics_list_metrics"' in grammar
    assert ('first ::= fn "(" | "robotics_execute_query" "(query=\'" wrap '
            '("suction_vacuum_kpa")') in grammar  # fmt: skip
    llama_cpp.LlamaGrammar.from_string(grammar, verbose=False)  # llama.cpp accepts it
    # no hinted metric: the grammar the recorded runs replay with
    assert code_grammar(list(SPECS), {}) == code_grammar(list(SPECS))


def _gbnf_regex(grammar: str) -> re.Pattern[str]:
    """A regular expression for a grammar without recursion (as ``code_grammar``'s are)."""
    rules = dict(line.split(" ::= ", 1) for line in grammar.splitlines())
    token = re.compile(
        r'"((?:[^"\\]|\\.)*)"|(\[(?:[^\]\\]|\\.)*\][*+?]?)|([a-z][a-z0-9]*)|(\s+)|(.)'
    )

    def expand(expr: str) -> str:
        out = []
        for m in token.finditer(expr):
            text, cls, name, _space, other = m.groups()
            if text is not None:
                out.append(re.escape(json.loads(f'"{text}"')))
            elif cls is not None:
                out.append(cls)
            elif name is not None:
                out.append(f"(?:{expand(rules[name])})")
            elif other is not None:
                out.append(other)
        return "".join(out)

    return re.compile(expand(rules["root"]), re.S)


def test_a_hinted_metrics_name_ends_there():
    metrics = {"robotics_execute_query": ["pick_attempts", "pick_errors"]}
    ended = _gbnf_regex(code_grammar(list(SPECS), metrics))
    reply = "```python\nr1 = robotics_execute_query(query='sum_over_time({m}[30m])', time=NOW)\n```"
    assert ended.fullmatch(reply.format(m='pick_errors{site="DFW7"}'))
    assert ended.fullmatch(reply.format(m="pick_attempts"))
    # measured before: the model went on past the name, into a metric the server lacks
    assert not ended.fullmatch(reply.format(m='pick_errorsecutive{site="DFW7"}'))
    as_recorded = _gbnf_regex(code_grammar(list(SPECS), metrics, ended=False))
    assert as_recorded.fullmatch(reply.format(m='pick_errorsecutive{site="DFW7"}'))
    import llama_cpp

    llama_cpp.LlamaGrammar.from_string(code_grammar(list(SPECS), metrics), verbose=False)


def test_an_age_check_whose_code_found_nothing_is_false():
    answer = '{"observed": 0.0, "comparison": "<=", "threshold": 8.0, "explanation": "x"}'
    text, notes = no_record(answer, "[]\n[{'max(\"performed_at\")': None}]\nNone")
    typed = parse_answer(text, ("<=", 8.0))
    assert (typed.verdict, typed.observed, typed.explanation) == ("false", None, NO_RECORD)
    assert notes and NO_RECORD in notes[0]
    # something was printed: the answer stands
    assert no_record(answer, "[{'age': 3.5}]\n3.5") == (answer, [])
    assert no_record(answer, "ok") == (answer, [])
    assert json.loads(answer)["observed"] == 0.0


def test_review_holds_code_to_its_moment(monkeypatch):
    from sopgraph.nodes.sandbox import SandboxLimits

    code = ("r1 = ops_execute_query(sql='SELECT count(*) FROM equipment_states WHERE "
            "started_at > ? AND started_at <= ?', params=['2025-03-16 23:48:03', "
            "'2025-03-17 23:48:03'])\nprint(r1)")  # fmt: skip
    run = CodeActRun(None, {f: None for f in SPECS}, SPECS, SandboxLimits(),  # type: ignore[arg-type]
                     hints=("ops.equipment_states",), samples=3, grounded=True,
                     constrained=1, now=NOW, moment=True)  # fmt: skip
    assert review(code, run).startswith("reads from 2025-03-16 23:48:03")
    unconstrained = CodeActRun(None, {f: None for f in SPECS}, SPECS, SandboxLimits(),  # type: ignore[arg-type]
                               hints=("ops.equipment_states",), samples=3, grounded=True,
                               now=NOW, moment=True)  # fmt: skip
    assert review(code, unconstrained) is None


# the recirculation check of alarm ALM-001345 (live, 2026-11-29): its first code, and the code
# it ran after the server's error, which averaged every row after the window's start
DROPPED = ("r1 = conveyance_execute_query(sql='SELECT avg(\"recirc_ratio\") FROM \"conveyance_5m\" "
           "WHERE \"site\" = ? AND \"five_minute_interval\" > ?', params=['ONT8', "
           "'2025-03-18 06:24:56'{end}])\nprint(table_rows(r1))")  # fmt: skip
ALARM = cw.parse_time("2025-03-18T06:39:56Z")
CONVEYANCE = {
    "conveyance_execute_query": _spec("conveyance_execute_query", "conveyance", ["sql", "params"])
}


def _window_run(level: int) -> CodeActRun:
    from sopgraph.nodes.sandbox import SandboxLimits

    return CodeActRun(None, dict.fromkeys(CONVEYANCE), CONVEYANCE, SandboxLimits(),  # type: ignore[arg-type]
                      hints=("conveyance.recirc_ratio",), samples=3, grounded=True,
                      constrained=level, now=ALARM, window=900, counted=True)  # fmt: skip


def test_review_sends_back_sql_whose_params_do_not_fit_or_that_reads_past_the_alarm():
    first = DROPPED.format(end=", '2025-03-18 06:39:56'")
    assert review(first, _window_run(2)) == (
        "its SQL has 2 placeholders (?) but 3 params: one value for each ?, in order"
    )
    assert review(DROPPED.format(end=""), _window_run(2)) == (
        "reads from 2025-03-18 06:24:56 with no end: rows after the alarm count too; bound the "
        "time to NOW (2025-03-18 06:39:56) as well"
    )
    bounded = first.replace("> ?'", '> ? AND "five_minute_interval" <= ?\'')
    assert review(bounded, _window_run(2)) is None
    assert review(DROPPED.format(end=", NOW").replace("> ?'", "> ? AND x <= ?'"),
                  _window_run(2)) is None  # fmt: skip
    # as recorded before (level 1): both ran
    assert review(first, _window_run(1)) is None
    assert review(DROPPED.format(end=""), _window_run(1)) is None


def test_a_threshold_set_after_the_value_is_not_held_against_the_code():
    """A sample of the recirculation check (live, ALM-001291): right SQL, right value, and
    ``threshold = 10`` set afterwards for a sentence; as recorded, the review sent it back."""
    sample = (DROPPED.format(end=", '2025-03-18 06:39:56'").replace(
        "> ?'", "> ? AND \"five_minute_interval\" <= ?'")
        + "\nvalue = table_rows(r1)[0]['avg(recirc_ratio)'] * 100\nprint(value)\n"
        "threshold = 10\nexplanation = 'measured {:.2f}; > {}'.format(value, threshold)")  # fmt: skip
    inside = sample.replace("* 100\nprint", "* 100 / 10\nprint")

    def run(level: int) -> CodeActRun:
        return dataclasses.replace(_window_run(level), stated=(">", 10.0), avoid=10.0)

    assert review(sample, run(2)) is None
    assert (
        review(inside, run(2)) == "uses the check's threshold 10 (the host compares: observed > 10)"
    )
    assert (
        review(sample, run(1)) == "uses the check's threshold 10 (the host compares: observed > 10)"
    )


def _demo(node, data, sql):
    call = DemoCall(function="conveyance_execute_query", args={"sql": sql, "params": []})
    return DemoRun(node=node, text="", calls=[call], verdict="false", data=data)


# alarm ALM-001393 (live, 2026-11-29): both demonstrations of "upstream conveyance recorded at
# least 3 jams" read the sorter's jams, and every sample copied them
SORTER = ('SELECT "five_minute_interval" > ?, "sorter_jam_events_total" FROM "conveyance_5m" '
          'WHERE "site" = ? AND "five_minute_interval" > ?')  # fmt: skip


def test_a_sql_query_may_not_name_the_demonstrations_other_data():
    import llama_cpp

    specs = {**SPECS, "conveyance_execute_query": _spec("conveyance_execute_query",
                                                         "conveyance", ["sql", "params"])}  # fmt: skip
    demos = [_demo("obs_sorter_jams", ["conveyance.sorter_jam_events_total"], SORTER)]
    hints = ["conveyance.upstream_jam_events_total"]
    blocked = blocked_prefixes(specs, hints, demos)
    # "s" starts "site": the shortest prefix that starts no name the check may want
    assert blocked == {"conveyance_execute_query": ["so"], "ops_execute_query": ["so"]}
    grammar = code_grammar(list(specs), hinted_metrics(specs, hints), blocked=blocked)
    llama_cpp.LlamaGrammar.from_string(grammar, verbose=False)  # llama.cpp accepts it
    held = _gbnf_regex(grammar)
    reply = "```python\nr1 = conveyance_execute_query(sql='{sql}', params=['BFI4'])\nprint(r1)\n```"
    assert not held.fullmatch(reply.format(sql=SORTER))
    assert held.fullmatch(reply.format(sql=SORTER.replace("sorter_jam", "upstream_jam")))
    assert held.fullmatch(reply.format(sql='SELECT count(*) FROM "stations" WHERE "site" = ?'))
    # later statements and other functions are free
    assert held.fullmatch("```python\nr1 = robotics_list_metrics(match='x')\nr2 = "
                          "conveyance_execute_query(sql='SELECT \"sorter_jam_events_total\"')\n```")  # fmt: skip
    # the check's own data, or no demonstration of other data: nothing blocked
    assert blocked_prefixes(specs, ["conveyance.sorter_jam_events_total"], demos) == {}
    assert blocked_prefixes(specs, hints, []) == {}
    # without blocked names (levels 1 and 2): the grammar those runs replay with
    metrics = hinted_metrics(specs, hints)
    assert code_grammar(list(specs), metrics) == code_grammar(list(specs), metrics, blocked={})


def test_blocked_prefixes_form_a_trie():
    held = _gbnf_regex(code_grammar(["q"], blocked={"q": ["so", "sorter_x", "up_t"]}))
    reply = "```python\nr1 = q(sql='SELECT \"{name}\" FROM t')\n```"
    for name in ("site", "s", "up", "up_", "up_s", "upstream", "x_sorter"):
        assert held.fullmatch(reply.format(name=name)), name
    for name in ("so", "sorter_jam", "up_t", "up_total"):
        assert not held.fullmatch(reply.format(name=name)), name


# alarm ALM-001393 (live, 2026-11-29): "every upstream reading of the last 45 minutes was
# below 70%" answered with the readings' average (68.7, true)
AVERAGED = (
    'r1 = conveyance_execute_query(sql=\'SELECT avg("upstream_rate_ratio") FROM "conveyance_5m" '
    'WHERE "site" = ? AND "five_minute_interval" > ? AND "five_minute_interval" <= ?\', '
    "params=['BFI4', '2025-03-18 19:08:36', '2025-03-18 19:53:36'])\nprint(table_rows(r1))\n"
    "feed = table_rows(r1)[0]['avg(upstream_rate_ratio)']\nvalue = feed * 100\nprint(value)"
)


def test_a_bound_on_every_reading_holds_the_extreme_reading():
    text = "Every upstream reading of the last 45 minutes was below 70% of plan."
    assert cw.check_extreme(text) == "max"
    assert cw.check_extreme("All readings of the hour were above 5 kPa.") == "min"
    assert cw.check_extreme("The upstream flow averaged below 70% of plan.") is None
    assert cw.check_extreme("At least 4 stations of the site were each idle more than 25%.") is None
    held, notes = cw.hold_extreme(AVERAGED, "max")
    assert 'SELECT max("upstream_rate_ratio")' in held and "'max(upstream_rate_ratio)'" in held
    assert "avg(" not in held and notes == ["avg( is not max: every reading"]
    promql = "r1 = q(query='min_over_time(x[45m])')\nvalue = min(series_values(r1))"
    assert cw.hold_extreme(promql, "max")[0] == (
        "r1 = q(query='max_over_time(x[45m])')\nvalue = max(series_values(r1))"
    )
    assert cw.hold_extreme(held, "max") == (held, [])


def test_the_extreme_is_held_from_level_3():
    from sopgraph.nodes.sandbox import SandboxLimits

    def run(level):
        return CodeActRun(None, {f: None for f in SPECS}, SPECS, SandboxLimits(),  # type: ignore[arg-type]
                          grounded=True, constrained=level, extreme="max")  # fmt: skip

    reply = f"```python\n{AVERAGED}\n```"
    held, notes = hold_code(run(3), reply)
    assert 'max("upstream_rate_ratio")' in held and notes
    assert hold_code(run(2), reply) == (reply, [])


def test_a_window_query_with_one_parameter_more_gets_its_end_at_the_alarm():
    from sopgraph.nodes.codeact_window import bound_window

    now = cw.parse_time("2025-03-19T03:45:43Z")
    code = (
        'r1 = conveyance_execute_query(sql=\'SELECT avg("upstream_rate_ratio") FROM '
        '"conveyance_5m" WHERE "site" = ? AND "five_minute_interval" > ?\', '
        "params=['ONT8', '2025-03-19 03:30:43', '2025-03-19 03:40:00'])\nprint(table_rows(r1))"
    )
    held, notes = bound_window(code, {"conveyance_execute_query"}, now)
    assert '"five_minute_interval" > ? AND "five_minute_interval" <= ?\'' in held
    assert "params=['ONT8', '2025-03-19 03:30:43', '2025-03-19 03:45:43'])" in held
    assert held.endswith("\nprint(table_rows(r1))") and len(notes) == 2
    ast.parse(held)
    # an end already at the alarm stays; only the placeholder is added
    at_alarm = code.replace("03:40:00", "03:45:00")
    held, notes = bound_window(at_alarm, {"conveyance_execute_query"}, now)
    assert "'2025-03-19 03:45:00'])" in held and len(notes) == 1
    # nothing to add: placeholders that fit, a last placeholder that is no lower bound, a
    # last parameter that is no time, or a function that takes no SQL
    fits = code.replace(", '2025-03-19 03:40:00'", "")
    assert bound_window(fits, {"conveyance_execute_query"}, now) == (fits, [])
    site_last = code.replace("\"site\" = ? AND \"five_minute_interval\" > ?",
                             "\"five_minute_interval\" > ? AND \"site\" = ?")  # fmt: skip
    assert bound_window(site_last, {"conveyance_execute_query"}, now)[1] == []
    not_time = code.replace("'2025-03-19 03:40:00'", "'BFI4'")
    assert bound_window(not_time, {"conveyance_execute_query"}, now)[1] == []
    assert bound_window(code, {"robotics_execute_query"}, now) == (code, [])
    assert bound_window("r1 = (", {"conveyance_execute_query"}, now) == ("r1 = (", [])


# alarm ALM-001426 (live, 2026-11-29): "at least 6 sorter chutes are currently reported full"
# queried a table that does not exist, in every reply
INVENTED = 'SELECT "site" FROM "conveyance_sorter_chutes_full" WHERE "timestamp" > ?'
TABLES = {"conveyance": {
    "conveyance_5m": ["site", "five_minute_interval", "sorter_chutes_full",
                      "sorter_jam_events_total", "belt_nw_fill_ratio"],
    "sorter_events": ["site", "at", "kind"],
}}  # fmt: skip


def test_a_sql_query_quotes_only_the_names_of_the_tables_holding_the_checks_data():
    import llama_cpp

    from sopgraph.nodes.codeact import allowed_names

    specs = {**SPECS, "conveyance_execute_query": _spec("conveyance_execute_query",
                                                         "conveyance", ["sql", "params"])}  # fmt: skip
    demos = [_demo("obs_sorter_jams", ["conveyance.sorter_jam_events_total"], SORTER)]
    allowed = allowed_names(specs, ["conveyance.sorter_chutes_full"], demos, TABLES)
    # the table holding the hinted column and its columns, less the demonstration's other data
    assert allowed == {"conveyance_execute_query": [
        "belt_nw_fill_ratio", "conveyance_5m", "five_minute_interval", "site",
        "sorter_chutes_full"]}  # fmt: skip
    grammar = code_grammar(list(specs), {}, allowed=allowed)
    llama_cpp.LlamaGrammar.from_string(grammar, verbose=False)  # llama.cpp accepts it
    held = _gbnf_regex(grammar)
    reply = "```python\nr1 = conveyance_execute_query(sql='{sql}', params=['BFI4'])\nprint(r1)\n```"
    assert not held.fullmatch(reply.format(sql=INVENTED))
    assert not held.fullmatch(reply.format(sql=SORTER))
    right = INVENTED.replace("conveyance_sorter_chutes_full", "conveyance_5m")
    assert held.fullmatch(reply.format(sql=right.replace('"timestamp"', '"five_minute_interval"')))
    assert not held.fullmatch(reply.format(sql=right))  # no column "timestamp"
    # a family hint (every word of it) and a table hint choose their tables too
    family = allowed_names(specs, ["conveyance.belt_fill"], [], TABLES)["conveyance_execute_query"]
    assert "conveyance_5m" in family and "sorter_events" not in family
    table = allowed_names(specs, ["conveyance.sorter_events"], [], TABLES)
    assert table == {"conveyance_execute_query": ["at", "kind", "site", "sorter_events"]}
    # no catalog, or a hint it does not hold: nothing is held (the blocked prefixes stay)
    assert allowed_names(specs, ["conveyance.sorter_chutes_full"], demos, {}) == {}
    assert allowed_names(specs, ["conveyance.no_such_thing"], demos, TABLES) == {}


def test_the_blocked_trie_does_not_follow_the_string_hashing():
    """A request's cassette key holds its grammar: the same prefixes, the same grammar in every
    process (a replay of the 12-alarm level-3 run had missed under some hash seeds)."""
    import os
    import subprocess
    import sys

    script = ("from sopgraph.prompts.codeact import code_grammar\n"
              "print(code_grammar(['q'], blocked={'q': ['so', 'st', 'to', 'ti', 'up_t', 'o']}))")  # fmt: skip
    grammars = set()
    for seed in ("0", "1", "2", "3", "4", "5"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                             text=True, check=True)  # fmt: skip
        grammars.add(out.stdout)
    assert len(grammars) == 1
    (grammar,) = grammars
    assert "[^'`\"ostu] [^'`\"]*" in grammar  # a node's characters, sorted


def test_the_other_nodes_data_of_the_same_table_is_not_quoted():
    from sopgraph.nodes.codeact import allowed_names

    specs = {"conveyance_execute_query": _spec("conveyance_execute_query", "conveyance",
                                               ["sql", "params"]),
             "ops_execute_query": _spec("ops_execute_query", "ops", ["sql", "params"])}  # fmt: skip
    tables = {**TABLES, "ops": {"equipment_states": ["site", "equipment_id", "state"]}}
    others = ["conveyance.sorter_jam_events_total", "conveyance.belt_fill",
              "ops.equipment_states.state"]  # fmt: skip
    jams = allowed_names(specs, ["conveyance.sorter_chutes_full"], [], tables, others)
    assert jams == {"conveyance_execute_query": ["conveyance_5m", "five_minute_interval", "site",
                                                 "sorter_chutes_full"]}  # fmt: skip
    # a table the check names keeps every column, another node's lookup column included
    states = allowed_names(specs, ["ops.equipment_states"], [], tables, others)
    assert states == {"ops_execute_query": ["equipment_id", "equipment_states", "site", "state"]}
    # the check's own family hint is never taken away by another node's
    belts = allowed_names(specs, ["conveyance.belt_fill"], [], tables, others)
    assert "belt_nw_fill_ratio" in belts["conveyance_execute_query"]


def test_level_4_a_check_of_two_metrics_reads_each_by_grammar():
    import llama_cpp

    metrics = hinted_metrics(SPECS, ["robotics.pick_errors", "robotics.pick_attempts"])
    grammar = code_grammar(list(SPECS), metrics, every=True)
    llama_cpp.LlamaGrammar.from_string(grammar, verbose=False)  # llama.cpp accepts it
    held = _gbnf_regex(grammar)
    q = "robotics_execute_query(query='sum_over_time({m}{{station=\"ST08\"}}[30m])', time=NOW)"
    both = f"```python\nr1 = {q.format(m='pick_errors')}\nr2 = {q.format(m='pick_attempts')}\n"
    assert held.fullmatch(both + "value = sum(series_values(r1)) / sum(series_values(r2))\n```")
    # measured: the errors alone, divided by the threshold
    alone = f"```python\nr1 = {q.format(m='pick_errors')}\nvalue = r1 / 4.5 * 100\n```"
    assert not held.fullmatch(alone)
    swapped = (
        f"```python\nr1 = {q.format(m='pick_attempts')}\nr2 = {q.format(m='pick_errors')}\n```"
    )
    assert not held.fullmatch(swapped)
    # one hinted metric, or level 3: the grammar as before
    one = hinted_metrics(SPECS, ["robotics.pick_errors"])
    assert code_grammar(list(SPECS), one, every=True) == code_grammar(list(SPECS), one)
    assert held.pattern != _gbnf_regex(code_grammar(list(SPECS), metrics)).pattern


# alarms ALM-001469 and ALM-001488 (live, 2026-11-29, level 4): "the station's robot is in a
# fault state at the time of the alarm", five params for four placeholders, the start a day early
ROBOT_FAULT = (
    'r2 = ops_execute_query(sql=\'SELECT count(*) FROM "equipment_states" WHERE "site" = ? '
    'AND "equipment_id" = ? AND "state" = ? AND "started_at" <= ?\', params=[\'BFI4\', '
    "'BFI4-R04', 'fault', '2025-03-16 23:48:03', '2025-03-17 23:48:03'])\nprint(table_rows(r2))"
)
STATES = ["site", "equipment_id", "equipment_type", "state", "started_at", "ended_at"]


def test_level_5_a_moment_checks_times_are_the_alarms_and_its_row_is_open_then():
    import sqlite3

    from sopgraph.evals.fc_triage.stores import OPS_SCHEMA

    held, notes = cw.hold_moment(ROBOT_FAULT, NOW)
    assert "'2025-03-16 23:48:03'" not in held and held.count("'2025-03-17 23:48:03'") == 2
    assert notes == ["time 2025-03-16 23:48:03 is before the alarm: the check is about its "
                     "moment, 2025-03-17 23:48:03"]  # fmt: skip
    held, notes = cw.bound_moment(held, {"ops_execute_query"}, set(STATES))
    assert '"started_at" <= ? AND ("ended_at" IS NULL OR "ended_at" > ?)\'' in held
    assert len(notes) == 1
    # the held query runs on the real ops schema: a fault open at the alarm counts, one that
    # ended before it or starts after it does not (level 4's query had failed on its bindings)
    sql = ast.literal_eval(re.search(r"sql=('[^']*')", held).group(1))
    params = ast.literal_eval(re.search(r"params=(\[[^\]]*\])", held).group(1))
    con = sqlite3.connect(":memory:")
    con.executescript(OPS_SCHEMA)
    rows = [("BFI4", "BFI4-R04", "robot", "fault", "2025-03-17 20:00:00", "2025-03-17 21:00:00"),
            ("BFI4", "BFI4-R04", "robot", "fault", "2025-03-17 23:59:00", None)]  # fmt: skip
    con.executemany("INSERT INTO equipment_states VALUES (?, ?, ?, ?, ?, ?)", rows)
    assert con.execute(sql, params).fetchone() == (0,)
    con.execute("INSERT INTO equipment_states VALUES (?, ?, ?, ?, ?, ?)",
                ("BFI4", "BFI4-R04", "robot", "fault", "2025-03-17 23:40:00", None))  # fmt: skip
    assert con.execute(sql, params).fetchone() == (1,)
    # nothing to add: params that fit, an end column the catalog does not hold, no start bound
    fits = ROBOT_FAULT.replace(", '2025-03-16 23:48:03'", "")
    assert cw.bound_moment(fits, {"ops_execute_query"}, set(STATES)) == (fits, [])
    assert cw.bound_moment(ROBOT_FAULT, {"ops_execute_query"}, {"started_at"})[1] == []
    no_start = ROBOT_FAULT.replace('"started_at" <= ?', '"state" = ?')
    assert cw.bound_moment(no_start, {"ops_execute_query"}, set(STATES))[1] == []
    # a ticket open at the alarm: opened_at's end is closed_at
    ticket = ROBOT_FAULT.replace("equipment_states", "tickets").replace("started_at", "opened_at")
    assert '("closed_at" IS NULL OR "closed_at" > ?)' in cw.bound_moment(
        ticket, {"ops_execute_query"}, {"opened_at", "closed_at"})[0]  # fmt: skip


def test_level_5_holds_a_moment_checks_code_only_from_level_5(triage_texts):
    text = triage_texts["rc_robot_fault"]
    run = CodeActRun(None, {}, {"ops_execute_query": _spec("ops_execute_query", "ops",
                                                           ["sql", "params"])},  # fmt: skip
                     None, now=NOW, moment=cw.states_moment(text), window=cw.check_window(text),
                     catalog={"ops": {"equipment_states": STATES}}, constrained=5)  # fmt: skip
    reply = f"```python\n{ROBOT_FAULT}\n```"
    held, notes = hold_code(run, reply)
    assert '("ended_at" IS NULL OR "ended_at" > ?)' in held and len(notes) == 2
    assert hold_code(dataclasses.replace(run, constrained=4), reply) == (reply, [])


def test_level_5_a_station_checks_first_query_may_look_its_device_up():
    """Alarm ALM-001473 (live, 2026-11-29, level 4): the demonstrations' first query looks the
    robot up in ``stations``; the grammar left that table out and the model wrote
    ``FROM "equipment_id"`` (no such table) in its reply and every sample."""
    import llama_cpp

    from sopgraph.nodes.codeact import allowed_names

    ops = {"ops": {"maintenance_log": ["site", "equipment_id", "component", "performed_at"],
                   "stations": ["site", "station", "robot_id"],
                   "tickets": ["site", "equipment_id", "opened_at"]}}  # fmt: skip
    specs = {"ops_execute_query": SPECS["ops_execute_query"]}
    level4 = allowed_names(specs, ["ops.maintenance_log"], [], ops)["ops_execute_query"]
    assert "stations" not in level4 and "robot_id" not in level4
    level5 = allowed_names(specs, ["ops.maintenance_log"], [], ops, lookup="station")
    assert level5["ops_execute_query"] == sorted({*level4, "stations", "station", "robot_id"})
    assert "tickets" not in level5["ops_execute_query"]  # another table with no station
    # a server that holds none of the check's data is still left out
    assert allowed_names(specs, ["ops.no_such_table"], [], ops, lookup="station") == {}
    grammar = code_grammar(list(specs), {}, allowed=level5)
    llama_cpp.LlamaGrammar.from_string(grammar, verbose=False)
    held = _gbnf_regex(grammar)
    lookup = ("```python\nr1 = ops_execute_query(sql='SELECT \"robot_id\" FROM \"stations\" WHERE "
              "\"site\" = ? AND \"station\" = ?', params=['ONT8', 'ST04'])\nprint(r1)\n```")  # fmt: skip
    assert held.fullmatch(lookup)
    assert not held.fullmatch(lookup.replace('"stations"', '"equipment_id_table"'))


def test_level_5_a_moment_check_reads_the_rows_open_then_not_a_window_of_starts():
    """A dev run on alarm ALM-001488 (live, 2026-11-29, level 5): the robot-fault check copied
    the 24-hour check's ``"started_at" > ? AND "started_at" <= ?``; with the moment's times it
    reads no row whatever the robot's state."""
    import sqlite3

    from sopgraph.evals.fc_triage.stores import OPS_SCHEMA

    window = ROBOT_FAULT.replace('"started_at" <= ?', '"started_at" > ? AND "started_at" <= ?')
    held, notes = cw.hold_moment(window, NOW)
    held, more = cw.bound_moment(held, {"ops_execute_query"}, set(STATES))
    assert ('AND ("ended_at" IS NULL OR "ended_at" > ?) AND "started_at" <= ?\', '
            "params=['BFI4', 'BFI4-R04', 'fault', '2025-03-17 23:48:03', "
            "'2025-03-17 23:48:03'])") in held  # fmt: skip
    assert len(notes) == 1 and len(more) == 1
    sql = ast.literal_eval(re.search(r"sql=('[^']*')", held).group(1))
    params = ast.literal_eval(re.search(r"params=(\[[^\]]*\])", held).group(1))
    con = sqlite3.connect(":memory:")
    con.executescript(OPS_SCHEMA)
    con.execute("INSERT INTO equipment_states VALUES (?, ?, ?, ?, ?, ?)",
                ("BFI4", "BFI4-R04", "robot", "fault", "2025-03-17 23:40:00", None))  # fmt: skip
    assert con.execute(sql, params).fetchone() == (1,)  # the fault open at the alarm
    # without the catalog's end column, nothing is changed
    assert cw.bound_moment(window, {"ops_execute_query"}, {"started_at"}) == (window, [])
