"""The CodeAct sub-agent driven by scripted models against real MCP servers (tests/servers)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
import pytest_asyncio
from dspy.utils import DummyLM
from fake_chat import ScriptedAgentModel, ScriptedChatModel
from langchain_core.messages import AIMessage

from sopgraph.graphs.executors import ToolContext, Unavailable
from sopgraph.graphs.model import Node
from sopgraph.nodes.codeact import (
    CodeActExecutor,
    clean_traceback,
    extract_code,
)
from sopgraph.nodes.mcp import McpPool, ServerConfig
from sopgraph.nodes.mcp_functions import allowed_servers, function_name
from sopgraph.prompts.verdict import VerdictExtractor

SERVER = Path(__file__).resolve().parents[1] / "servers" / "toy_metrics.py"
QUERY = "```python\nr = robotics_execute_query(metric='station_idle_pct', site='FC1')\nprint(r['value'])\n```"
shared_loop = pytest.mark.asyncio(loop_scope="module")  # the loop the module's pool lives in
ANSWER_TRUE = "ANSWER: idle 31.2% is above 25%.\nVERDICT: true\nOBSERVED: 31.2\nTHRESHOLD: 25"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pool():  # servers start once per module: a stdio server costs ~0.5 s (more under load)
    servers = {
        name: ServerConfig(command=sys.executable, args=[str(SERVER), "--name", name])
        for name in ("robotics", "ops")
    }
    async with McpPool(servers) as p:
        yield p


def _node(data=("robotics.station_idle_pct",)) -> Node:
    text = "The station was idle more than 25% of the time."  # no window: see test_codeact_window
    return Node(id="obs_idle", kind="observation", text=text, data=list(data))


def _ctx(node: Node, pool) -> ToolContext:
    return ToolContext(
        node_id=node.id, text=node.text, params={"idle_pct_threshold": 25}, parents={},
        input={"type": "station_idle", "site": "FC1", "timestamp": "2025-01-01T10:00:00Z"},
        run_id="t1", mcp=pool, node=node,
    )  # fmt: skip


def _model(*replies: str) -> ScriptedChatModel:
    return ScriptedChatModel(responses=[AIMessage(r) for r in replies])


@shared_loop
async def test_two_turn_answer_is_a_verdict_with_a_full_trace(pool):
    model = _model(QUERY, ANSWER_TRUE)
    outcome = await CodeActExecutor(model).decide(_node(), _ctx(_node(), pool))

    assert outcome.executor == "codeact" and outcome.error is None
    assert outcome.verdict.value == "true"
    assert outcome.verdict.observed == 31.2 and outcome.verdict.threshold == 25
    d = outcome.detail
    assert d["turns"] == 2 and d["answer"].startswith("ANSWER:") and d["stop"] is None
    assert d["code"][0]["ok"] and d["code"][0]["stdout"] == "31.2\n"
    (call,) = d["mcp_calls"]
    assert (call["server"], call["tool"], call["function"]) == (
        "robotics",
        "execute_query",
        "robotics_execute_query",
    )
    assert (
        call["args"] == {"metric": "station_idle_pct", "site": "FC1"}
        and call["result"]["value"] == 31.2
    )
    assert d["extract"]["source"] == "preparse"  # VERDICT: line: no extra LM call
    # the system prompt offers only the hinted server's tools, with their signatures
    system = model.seen[0][0].content
    assert "robotics_execute_query(metric: str, site: str, minutes: int = 15)" in system
    assert "ops_execute_query" not in system and "Site: FC1" in system
    # the second turn saw the output; tokens are the sum of both replies' usage
    assert "Output:\n31.2" in model.seen[1][-1].content
    words = [sum(len(str(m.content).split()) for m in seen) for seen in model.seen]
    assert d["input_tokens"] == sum(words)
    assert d["output_tokens"] == len(QUERY.split()) + len(ANSWER_TRUE.split())


@shared_loop
async def test_syntax_error_goes_back_to_the_model_which_fixes_it(pool):
    model = _model(
        "```python\nprint(robotics_execute_query(metric='station_idle_pct', site='FC1')\n```",
        QUERY,
        ANSWER_TRUE,
    )
    outcome = await CodeActExecutor(model).decide(_node(), _ctx(_node(), pool))

    assert outcome.verdict.value == "true" and outcome.detail["turns"] == 3
    first, second = outcome.detail["code"]
    assert not first["ok"] and "SyntaxError" in first["error"] and second["ok"]
    feedback = model.seen[1][-1].content
    assert "SyntaxError" in feedback and 'File "<string>"' not in feedback  # runner frames hidden


@shared_loop
async def test_mcp_tool_error_is_handled_by_the_code(pool):
    code = (
        "```python\ntry:\n    robotics_broken_query(metric='station_idle_pct')\n"
        "except Exception as exc:\n    print('failed:', exc)\n```"
    )
    model = _model(code, "ANSWER: the backend is down.\nVERDICT: no_data")
    outcome = await CodeActExecutor(model).decide(_node(), _ctx(_node(), pool))

    assert outcome.verdict.value == "no_data"
    (call,) = outcome.detail["mcp_calls"]
    assert "backend down" in call["error"] and call["result"] is None
    assert "failed:" in outcome.detail["code"][0]["stdout"] and outcome.detail["code"][0]["ok"]


@shared_loop
async def test_uncaught_tool_error_reaches_the_model_as_an_error(pool):
    code = "```python\nprint(robotics_broken_query(metric='station_idle_pct'))\n```"
    model = _model(code, QUERY, ANSWER_TRUE)
    outcome = await CodeActExecutor(model).decide(_node(), _ctx(_node(), pool))

    assert outcome.verdict.value == "true"
    assert not outcome.detail["code"][0]["ok"]
    assert "ToolError" in model.seen[1][-1].content and "backend down" in model.seen[1][-1].content


@shared_loop
async def test_turn_budget_exhausted_is_unresolved_with_a_reason(pool):
    model = _model(QUERY)  # writes code forever
    outcome = await CodeActExecutor(model, max_turns=3).decide(_node(), _ctx(_node(), pool))

    assert outcome.verdict is None
    assert outcome.error == "codeact: turn budget of 3 model replies exhausted without an answer"
    # the same code again is not run: it is told so, and that the answer is due
    assert outcome.detail["turns"] == 3 and len(outcome.detail["code"]) == 1
    assert "already ran (it was not run again)" in model.seen[2][-1].content
    assert "last reply" in model.seen[2][-1].content  # it was told to answer on its last turn
    assert outcome.detail["input_tokens"] > 0  # a failure's tokens still count


@shared_loop
async def test_garbage_twice_is_unresolved(pool):
    model = _model("I believe the station is fine.", "Yes.")
    outcome = await CodeActExecutor(model).decide(_node(), _ctx(_node(), pool))

    assert outcome.verdict is None and "neither code nor ANSWER" in outcome.error
    assert outcome.detail["turns"] == 2 and outcome.detail["code"] == []
    assert "neither a ```python code block" in model.seen[1][-1].content


@shared_loop
async def test_forbidden_tool_is_refused_and_never_reaches_the_server(pool):
    code = "```python\nprint(call_tool('ops_execute_query', {'metric': 'fault_count', 'site': 'FC1'}))\n```"
    model = _model(code, "ANSWER: I could not read it.\nVERDICT: no_data")
    before = pool.calls
    outcome = await CodeActExecutor(model).decide(_node(), _ctx(_node(), pool))

    (call,) = outcome.detail["mcp_calls"]
    assert call["function"] == "ops_execute_query" and call["server"] is None
    assert call["error"].startswith("tool not allowed: ops_execute_query")
    assert not outcome.detail["code"][0]["ok"] and pool.calls == before
    assert "tool not allowed" in model.seen[1][-1].content


@shared_loop
async def test_no_model_is_unavailable(pool):
    with pytest.raises(Unavailable, match="SOPGRAPH_MODEL"):
        await CodeActExecutor(None).decide(_node(), _ctx(_node(), pool))


@shared_loop
async def test_free_text_answer_is_read_by_the_dspy_extractor(pool):
    lm = DummyLM(
        [{"value": "false", "observed": "12.5", "threshold": "25", "explanation": "below"}]
    )
    model = _model(QUERY, "ANSWER: it was only 12.5 percent, well under the limit.")
    ex = CodeActExecutor(model, extractor=VerdictExtractor(lm=lm))
    outcome = await ex.decide(_node(), _ctx(_node(), pool))

    assert outcome.verdict.value == "false" and outcome.verdict.observed == 12.5
    assert outcome.detail["extract"]["source"] == "lm"


@shared_loop
async def test_free_text_answer_without_an_lm_is_unresolved(pool):
    model = _model(QUERY, "ANSWER: it was 31.2 percent.")
    outcome = await CodeActExecutor(model).decide(_node(), _ctx(_node(), pool))
    assert outcome.verdict is None
    assert outcome.error == (
        "codeact: the answer states no `VERDICT:` line and no DSPy LM is configured to read it"
    )


@shared_loop
async def test_model_failure_ends_the_loop_with_a_reason(pool):
    def down(messages):
        raise ConnectionError("connection refused\nmore detail")

    outcome = await CodeActExecutor(ScriptedChatModel(responder=down)).decide(
        _node(), _ctx(_node(), pool)
    )
    assert outcome.verdict is None
    assert outcome.error == "codeact: model call failed: ConnectionError: connection refused"


@shared_loop
@pytest.mark.parametrize("site,expected", [("FC1", "true"), ("FC2", "false")])
async def test_scripted_provider_plays_a_real_codeact_run(pool, site, expected):
    node = _node()
    ctx = _ctx(node, pool)
    ctx.input["site"] = site
    outcome = await CodeActExecutor(ScriptedAgentModel()).decide(node, ctx)

    assert outcome.verdict.value == expected, outcome.detail
    (call,) = outcome.detail["mcp_calls"]
    assert call["function"] == "robotics_execute_query"
    assert call["args"]["metric"] == "station_idle_pct" and call["args"]["site"] == site
    assert outcome.detail["turns"] == 2 and outcome.detail["output_tokens"] > 0


@shared_loop
async def test_scripted_provider_answers_no_data_for_an_unknown_metric(pool):
    node = _node(data=["robotics.conveyor_speed"])
    outcome = await CodeActExecutor(ScriptedAgentModel()).decide(node, _ctx(node, pool))
    assert outcome.verdict.value == "no_data"


def test_allowed_servers_follow_the_data_hints():
    servers = ["robotics", "ops", "conveyance"]
    assert allowed_servers(_node(["robotics.idle", "ops.staff", "robotics.fault"]), servers) == [
        "robotics",
        "ops",
    ]
    assert allowed_servers(_node([]), servers) == servers
    assert allowed_servers(_node(["nowhere.metric"]), servers) == servers
    assert function_name("ops", "execute-query") == "ops_execute_query"


def test_code_extraction_and_traceback_cleaning():
    assert extract_code("text\n```python\na = 1\n```\nmore\n```\nb = 2\n```") == "a = 1\nb = 2"
    assert extract_code("```python\nprint(1)") == "print(1)"  # cut off by max_tokens
    assert extract_code("ANSWER: no code") is None
    tb = (
        'Traceback (most recent call last):\n  File "<string>", line 218, in main\n'
        '  File "<sandbox>", line 1, in <module>\n    x = 1/0\nZeroDivisionError: division by zero\n'
    )
    assert clean_traceback(tb) == (
        'Traceback (most recent call last):\n  File "<sandbox>", line 1, in <module>\n'
        "    x = 1/0\nZeroDivisionError: division by zero"
    )


# -- text a model wrote must serialise: `sopgraph run --arch codeact --json` ----------------

LONE_ARG = (
    "```python\nr = robotics_execute_query(metric='station_idle_pct\\ud800', site='FC1')\n"
    "print(r['value'])\n```"
)
# the model's own reply holds the lone surrogate (an endpoint's JSON "\ud800"), not an escape
LONE_TEXT = "```python\nprint(robotics_list_metrics(), 'idle \ud800')\n```"


@pytest.mark.parametrize("reply", [LONE_ARG, LONE_TEXT], ids=["tool argument", "reply text"])
def test_lone_surrogates_from_the_model_do_not_break_the_json_output(
    reply, tmp_path, monkeypatch, capsys
):
    import json

    from fake_chat import scripted_dspy_lm
    from sop_factory import make_sop

    from sopgraph.cli import main
    from sopgraph.nodes import architectures

    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    sop = {
        "id": "lone_surrogate",
        "params": {"idle_pct_threshold": 25},
        "entry": {"station_idle": ["obs_idle"]},
        "nodes": {
            "obs_idle": {
                "kind": "observation",
                "text": "The station was idle more than {idle_pct_threshold}% of 15 minutes.",
                "data": ["robotics.station_idle_pct"],
                "next": {"true": ["act_close"], "false": ["act_close"]},
            },
            "act_close": {"kind": "action", "text": "Close the alarm."},
        },
    }
    root = make_sop(tmp_path / "sop", sop, {})
    servers = {"robotics": {"command": sys.executable, "args": [str(SERVER), "--name", "robotics"]}}
    (root / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    model = _model(reply, ANSWER_TRUE)
    fake = architectures.Models(model, scripted_dspy_lm(), "fake")
    monkeypatch.setattr(architectures, "load_models", lambda settings=None: fake)
    alarm = {"type": "station_idle", "site": "FC1", "timestamp": "2025-01-01T10:00:00Z"}

    code = main(["run", str(root), "--arch", "codeact", "--input", json.dumps(alarm), "--json"])

    out = capsys.readouterr().out
    assert code == 0, out[-2000:]
    result = json.loads(out)
    out.encode("utf-8")  # strict: no surrogate left anywhere in the output
    (step,) = [s for s in result["trail"] if s["node"] == "obs_idle"]
    assert step["executor"] == "codeact" and step["verdict"] == "true"
    detail = step["detail"]
    if reply is LONE_ARG:
        (call,) = detail["mcp_calls"]
        assert call["args"]["metric"] == "station_idle_pct\ufffd"
    else:
        assert detail["code"][0]["ok"] and detail["code"][0]["stdout"].endswith("] idle \ufffd\n")


# -- looks before it answers, answers typed -------------------------------------------------

TYPED_TRUE = '{"verdict": "true", "observed": 31.2, "explanation": "idle 31.2% is above 25%"}'


@shared_loop
async def test_after_reading_data_the_answer_is_typed(pool):
    model = _model(QUERY, TYPED_TRUE)
    node = _node()
    outcome = await CodeActExecutor(model=model).decide(node, _ctx(node, pool))
    assert outcome.verdict.value == "true" and outcome.verdict.observed == 31.2
    assert outcome.verdict.explanation == "idle 31.2% is above 25%"
    d = outcome.detail
    assert d["turns"] == 2 and d["extract"] == {"source": "typed"}  # no extraction call
    # the step that read data is followed by the request for the typed answer
    assert "Answer now with one JSON object" in model.seen[1][-1].content


@shared_loop
async def test_an_answer_before_any_function_call_goes_back_once(pool):
    model = _model(ANSWER_TRUE, QUERY, TYPED_TRUE)
    node = _node()
    outcome = await CodeActExecutor(model=model).decide(node, _ctx(node, pool))
    assert outcome.verdict.value == "true" and outcome.detail["turns"] == 3
    assert "You have not read any data yet" in model.seen[1][-1].content
    assert [c["function"] for c in outcome.detail["mcp_calls"]] == ["robotics_execute_query"]

    stubborn = _model(ANSWER_TRUE)  # answers again without looking: no verdict, and why
    outcome = await CodeActExecutor(model=stubborn).decide(node, _ctx(node, pool))
    assert outcome.verdict is None
    assert "answered without calling any function" in outcome.error


@shared_loop
async def test_now_is_the_inputs_time_and_the_result_helpers_are_defined(pool):
    code = (
        "```python\nprint(NOW)\n"
        "print(series_values({'data': {'result': [{'value': [0, '2.5']}, {'metric': {}}]}}))\n"
        "print(table_rows({'columns': ['a', 'b'], 'rows': [[1, 2]]}))\n"
        "r = robotics_execute_query(metric='station_idle_pct', site='FC1')\n```"
    )
    model = _model(code, TYPED_TRUE)
    node = _node()
    outcome = await CodeActExecutor(model=model).decide(node, _ctx(node, pool))
    step = outcome.detail["code"][0]
    assert step["ok"], step["error"]
    assert step["stdout"] == "2025-01-01T10:00:00Z\n[2.5]\n[{'a': 1, 'b': 2}]\n"
    assert step["code"] == code.split("\n", 1)[1].rsplit("\n", 1)[0]  # the model's code only


@shared_loop
async def test_catalog_calls_alone_do_not_make_the_answer_due(pool):
    listing = "```python\nprint(robotics_list_metrics())\n```"
    model = _model(listing, QUERY, TYPED_TRUE)
    node = _node()
    outcome = await CodeActExecutor(model=model).decide(node, _ctx(node, pool))
    assert outcome.verdict.value == "true" and outcome.detail["turns"] == 3
    assert "Answer now" not in model.seen[1][-1].content
    assert "Answer now" in model.seen[2][-1].content


def test_only_the_local_model_is_bound_to_the_answer_grammar():
    from sopgraph.nodes.codeact import typed_answer_model
    from sopgraph.nodes.models import Settings, chat_model
    from sopgraph.prompts.codeact import ANSWER_SCHEMA

    local = chat_model(Settings(model="local"))
    bound = typed_answer_model(local)
    fmt = bound.kwargs["extra_body"]["response_format"]
    assert fmt == {"type": "json_object", "schema": ANSWER_SCHEMA}
    assert typed_answer_model(_model("x")) is None  # elsewhere the answer is parsed from text


def test_a_local_models_code_reply_must_start_by_calling_a_function():
    from sopgraph.nodes.codeact import code_reply_model
    from sopgraph.nodes.models import Settings, chat_model
    from sopgraph.prompts.codeact import code_grammar

    grammar = code_grammar(["robotics_execute_query", "ops_list_tables"])
    bound = code_reply_model(chat_model(Settings(model="local")), ["robotics_execute_query"])
    assert bound.kwargs["extra_body"] == {"grammar": code_grammar(["robotics_execute_query"])}
    assert code_reply_model(_model("x"), ["f"]) is None
    assert 'root ::= "```python\\n" "r1 = " fn "(" body "```"' in grammar
    assert 'fn ::= "ops_list_tables" | "robotics_execute_query"' in grammar
    llama_cpp = pytest.importorskip("llama_cpp")
    llama_cpp.LlamaGrammar.from_string(grammar, verbose=False)  # llama.cpp accepts it


@shared_loop
async def test_the_host_decides_the_verdict_from_the_measured_answer(pool):
    measured = '{"observed": 31.2, "comparison": "<", "threshold": 3, "explanation": "yes"}'
    model = _model(QUERY, measured)
    node = _node()
    outcome = await CodeActExecutor(model=model).decide(node, _ctx(node, pool))
    # the model's "yes" does not decide, nor its comparison: the text states "more than 25%",
    # and 31.2 > 25 holds
    assert outcome.verdict.value == "true" and outcome.verdict.observed == 31.2
    measured = measured.replace("31.2", "0.76")
    model = _model(QUERY.replace("print(r['value'])", "print(0.76)"), measured)
    outcome = await CodeActExecutor(model=model).decide(node, _ctx(node, pool))
    assert outcome.verdict.value == "false" and outcome.verdict.observed == 0.76


def test_the_comparison_the_text_states_is_the_hosts():
    from sopgraph.prompts.codeact import answer_schema, parse_answer, stated_comparison

    assert stated_comparison("More than 5% of the station's labels failed") == (">", 5.0)
    assert stated_comparison("At least 3 stations each failed more than 3% of reads") == (">=", 3.0)
    assert stated_comparison("The lens was cleaned within the last 8 hours") == ("<=", 8.0)
    assert stated_comparison("Vacuum averaged below 58 kPa over the last 30 minutes") == ("<", 58.0)
    assert stated_comparison("A ticket for this robot was already open") is None
    # a state the text asserts without a number is held against 0 (not left to the model)
    from sopgraph.prompts.codeact import implied_comparison

    assert implied_comparison("A ticket for this robot was already open") == (">", 0.0)
    assert implied_comparison("The station's robot is in a fault state at the time") == (">", 0.0)
    assert implied_comparison("The robot has reported no metrics at all in the last 15 minutes "
                              "(its exporter is down, not the robot).") == ("==", 0.0)  # fmt: skip
    assert implied_comparison("The upstream flow sensor has reported nothing for 30 minutes") == (
        "==", 0.0,
    )  # fmt: skip
    assert implied_comparison("More than 5% of the station's labels failed") is None
    assert implied_comparison("Restart the sorter only if it jammed in every interval.") is None
    schema = answer_schema((">", 5.0))
    assert schema["properties"]["comparison"] == {"const": ">"}
    assert schema["properties"]["threshold"] == {"const": 5.0}
    # the model's own comparison does not decide where the text states one
    said = '{"observed": 0.02, "comparison": "<", "threshold": 5, "explanation": ""}'
    assert (
        parse_answer(said).verdict == "true" and parse_answer(said, (">", 5.0)).verdict == "false"
    )


def test_typed_answer_parsing():
    from sopgraph.prompts.codeact import parse_answer

    measured = '{"observed": 12, "comparison": "<=", "threshold": 8, "explanation": ""}'
    assert parse_answer(measured).verdict == "false"
    assert parse_answer(measured.replace("<=", ">")).verdict == "true"
    assert (
        parse_answer('{"observed": null, "comparison": ">", "threshold": 8}').verdict == "no_data"
    )

    assert parse_answer('note {"verdict": true, "observed": 3}').verdict == "true"
    assert (
        parse_answer('{"verdict": "no_data", "observed": null, "explanation": ""}').observed is None
    )
    assert parse_answer('{"verdict": "maybe"}') is None
    assert parse_answer("ANSWER: yes") is None


# -- the host reviews code before it runs ---------------------------------------------------

OTHER_DATA = (
    "```python\nr = robotics_execute_query(metric='pick_errors', site='FC1')\nprint(r)\n```"
)
USES_THRESHOLD = (
    "```python\nr = robotics_execute_query(metric='station_idle_pct', site='FC1')\n"
    "print(r['value'] > 25)\n```"
)


@shared_loop
@pytest.mark.parametrize(
    ("first", "said"),
    [
        (OTHER_DATA, "reads none of the check's data (station_idle_pct)"),
        (USES_THRESHOLD, "uses the check's threshold 25"),
    ],
)
async def test_code_that_misreads_the_check_is_not_run_a_verified_sample_is(pool, first, said):
    fails = "```python\nr = robotics_execute_query(metric='station_idle_pct', site='FC1')\nprint(r['nope'])\n```"
    model = _model(first, fails, QUERY, TYPED_TRUE)
    node = _node()
    outcome = await CodeActExecutor(model=model, samples=3).decide(node, _ctx(node, pool))
    assert outcome.verdict.value == "true" and outcome.detail["turns"] == 2
    # the samples answered the first prompt, the first reply and why it was sent back (level
    # 3); the first sample passed the review but failed when run
    assert model.seen[1] == model.seen[2] and model.seen[1][:-2] == model.seen[0]
    assert model.seen[1][-2].content == first
    assert f"(its review: {said}" in model.seen[1][-1].content
    (record,) = outcome.detail["resampled"]
    assert (record["turn"], record["chosen"], record["samples"]) == (1, 2, 2)
    assert record["problems"][0].startswith(said)
    assert record["problems"][1].startswith("failed: KeyError")
    # only the chosen code is in the trace, run once; the model saw its output
    (ran,) = outcome.detail["code"]
    assert ran["ok"] and ran["code"] in QUERY and ran["stdout"] == "31.2\n"
    assert [c["args"]["metric"] for c in outcome.detail["mcp_calls"]] == ["station_idle_pct"]
    assert model.seen[3][-2].content == QUERY and "Output:\n31.2" in model.seen[3][-1].content
    # every reply's tokens count
    replies = (first, fails, QUERY, TYPED_TRUE)
    assert outcome.detail["output_tokens"] == sum(len(r.split()) for r in replies)


@shared_loop
async def test_before_level_3_the_samples_answer_the_same_prompt(pool):
    fails = "```python\nr = robotics_execute_query(metric='station_idle_pct', site='FC1')\nprint(r['nope'])\n```"
    model = _model(OTHER_DATA, fails, QUERY, TYPED_TRUE)
    node = _node()
    executor = CodeActExecutor(model=model, samples=3, constrained=2)
    outcome = await executor.decide(node, _ctx(node, pool))
    assert outcome.verdict.value == "true"
    assert model.seen[1] == model.seen[0] == model.seen[2]


@shared_loop
async def test_when_no_sample_passes_the_first_reply_runs_as_it_is(pool):
    model = _model(USES_THRESHOLD, USES_THRESHOLD, USES_THRESHOLD, USES_THRESHOLD, TYPED_TRUE)
    node = _node()
    # grounded=False: a step that printed no number would first be asked for the value
    executor = CodeActExecutor(model=model, samples=3, grounded=False)
    outcome = await executor.decide(node, _ctx(node, pool))
    (record,) = outcome.detail["resampled"]
    assert (record["chosen"], record["samples"], len(record["problems"])) == (None, 3, 4)
    (ran,) = outcome.detail["code"]
    assert ran["ok"] and ran["stdout"] == "True\n"
    assert outcome.verdict.value == "true" and outcome.detail["turns"] == 2
    # off (SOPGRAPH_CODEACT_SAMPLES=0; the default is 3): the reply runs as it is
    model = _model(USES_THRESHOLD, TYPED_TRUE)
    executor = CodeActExecutor(model=model, samples=0, grounded=False)
    outcome = await executor.decide(node, _ctx(node, pool))
    assert "resampled" not in outcome.detail and len(model.seen) == 2


def test_three_samples_are_the_default(monkeypatch):
    monkeypatch.delenv("SOPGRAPH_CODEACT_SAMPLES", raising=False)
    assert CodeActExecutor(model=_model(TYPED_TRUE)).samples == 3
    monkeypatch.setenv("SOPGRAPH_CODEACT_SAMPLES", "0")
    assert CodeActExecutor(model=_model(TYPED_TRUE)).samples == 0


@shared_loop
async def test_once_no_sample_of_a_turn_passes_later_turns_are_not_reviewed(pool):
    other = USES_THRESHOLD.replace("> 25", ">= 25")  # a second reply with the same problem
    model = _model(*[USES_THRESHOLD] * 4, other, TYPED_TRUE)
    node = _node()
    # level 3: from level 4 an answer printed nowhere is sent back once more (its own test)
    executor = CodeActExecutor(model=model, samples=3, constrained=3)
    outcome = await executor.decide(node, _ctx(node, pool))
    # turn 1: the reply and its 3 samples fail the review; its code ran and printed no number,
    # so the value was asked for; turn 2's reply ran as it is, not sampled again
    (record,) = outcome.detail["resampled"]
    assert (record["turn"], record["chosen"], record["samples"]) == (1, None, 3)
    assert [step["code"] in other for step in outcome.detail["code"]] == [False, True]
    assert len(model.seen) == 6 and outcome.detail["turns"] == 3
    assert outcome.verdict.value == "true"


def test_review_allows_a_threshold_the_text_names_twice_and_code_that_reads_the_hints():
    from sopgraph.nodes.codeact import CodeActRun, review, threshold_to_avoid

    def run(text, stated, hints=("robotics.camera_read_fail_pct",)):
        fns = {"q": None, "ops_execute_query": None}
        avoid = threshold_to_avoid(stated, text)
        return CodeActRun(_model(), fns, {}, None, stated=stated, avoid=avoid, hints=hints)

    spread = "At least 3 stations each failed more than 3% of their camera reads."
    counts = "r1 = q('camera_read_fail_pct')\nvalue = len([v for v in r1 if v > 3])"
    assert review(counts, run(spread, (">=", 3.0))) is None  # 3 is also the per-station cut
    one = "The station's camera failed more than 3% of its reads."
    assert "threshold 3 " in review(counts, run(one, (">", 3.0)))
    assert review("r1 = q('camera_read_fail_pct')\nvalue = r1[0]", run(one, (">", 3.0))) is None
    # a hint names a family of columns: every word of it is enough
    belt = "r1 = q(sql='SELECT avg(belt_nw_fill_ratio) FROM conveyance_5m')"
    assert review(belt, run("x", None, ("conveyance.belt_fill",))) is None
    assert "belt_fill" in review("r1 = q(sql='SELECT avg(recirc_ratio)')",
                                 run("x", None, ("conveyance.belt_fill",)))  # fmt: skip
    # a table hint: its table or column named in the SQL is enough
    sql = "r1 = ops_execute_query(sql='SELECT max(performed_at) FROM maintenance_log')"
    assert review(sql, run("Cleaned recently.", None, ("ops.maintenance_log",))) is None
    assert "maintenance_log" in review(
        "r1 = ops_execute_query(sql='SELECT 1')", run("x", None, ("ops.maintenance_log",))
    )


def test_review_sends_back_sql_sent_to_a_function_that_takes_none():
    from sopgraph.nodes.codeact import CodeActRun, review
    from sopgraph.prompts.codeact import FunctionSpec

    def spec(name, params):
        schema = {"properties": {p: {"type": "string"} for p in params}}
        return FunctionSpec(name=name, server=name.split("_")[0], tool="execute_query",
                            input_schema=schema)  # fmt: skip

    specs = {"robotics_execute_query": spec("robotics_execute_query", ["query"]),
             "ops_execute_query": spec("ops_execute_query", ["sql"])}  # fmt: skip
    run = CodeActRun(_model(), dict.fromkeys(specs), specs, None, grounded=True)
    promql = "r1 = robotics_execute_query(query='SELECT sum(units) FROM throughput')"
    assert "sends SQL to robotics_execute_query" in review(promql, run)
    named = 'q = f"SELECT sum(units)\\n FROM t WHERE site={s}"\nr1 = robotics_execute_query(q)'
    assert "which takes no SQL (its parameters: query)" in review(named, run)
    assert review("r1 = ops_execute_query(sql='SELECT sum(units) FROM throughput')", run) is None
    assert review("r1 = robotics_execute_query(query='sum(units_total)')", run) is None
    # off (as the runs recorded before it replay)
    run.grounded = False
    assert review(promql, run) is None


def test_review_sends_back_code_over_the_wrong_scope():
    from sopgraph.nodes.codeact import CodeActRun, review

    def run(scope):
        return CodeActRun(_model(), {"q": None}, {}, None, hints=("robotics.station_idle_pct",),
                          scope=scope, station="ST05")  # fmt: skip

    site = "r1 = q(query='avg_over_time(station_idle_pct{site=\"FC1\"}[15m])')"
    one = 'r1 = q(query=\'avg_over_time(station_idle_pct{site="FC1",station="ST05"}[15m])\')'
    assert "never names the alarmed station ST05" in review(site, run("station"))
    assert review(one, run("station")) is None
    assert "counts the site's stations" in review(one, run("spread"))
    assert review(site + "\nvalue = len(series_values(r1))", run("spread")) is None
    # code that reads no data (a look at the catalog) is not held to a scope
    assert review("r1 = robotics_list_metrics(match='idle')", run("station")) is None


@shared_loop
async def test_a_repeated_reply_is_not_run_and_the_next_is_sampled(pool):
    broken = "```python\nr1 = robotics_execute_query(query='x'\nprint(r1)\n```"  # a SyntaxError
    model = _model(broken, broken, QUERY, ANSWER_TRUE)
    outcome = await CodeActExecutor(model).decide(_node(), _ctx(_node(), pool))
    assert outcome.verdict.value == "true"
    # the broken code ran once; its greedy repeat was not run, and the reply after it was
    # sampled (temperature, a seed: a recording replays)
    assert [step["ok"] for step in outcome.detail["code"]] == [False, True]
    sampled = [(k.get("temperature"), k.get("seed")) for k in model.recorder.kwargs]
    assert sampled == [(None, None), (None, None), (0.5, 1), (None, None)]


VERDICT_ONLY = (
    "```python\nr = robotics_execute_query(metric='station_idle_pct', site='FC1')\n"
    "print('true' if r['value'] > 25 else 'false')\n```"
)
MADE_UP = '{"observed": 0.43, "comparison": ">", "threshold": 25, "explanation": "x"}'


@shared_loop
async def test_code_that_printed_no_number_is_asked_for_the_value_and_the_answer_held_to_it(pool):
    model = _model(VERDICT_ONLY, QUERY, MADE_UP)
    node = _node()
    # samples=0: the verdict-only code uses the threshold, which the review would send back
    executor = CodeActExecutor(model, samples=0, grounded=True)
    outcome = await executor.decide(node, _ctx(node, pool))
    # the verdict it printed is not the answer: the value is asked for once
    assert "printed no number" in model.seen[1][-1].content
    assert "Answer now" not in model.seen[1][-1].content
    assert "Answer now" in model.seen[2][-1].content
    # the answer's 0.43 was printed nowhere: the 31.2 printed is taken, and the host decides
    assert outcome.verdict.value == "true" and outcome.verdict.observed == 31.2
    assert "printed nowhere" in outcome.detail["grounded"][0]
    # off (as the runs recorded before it replay): the made-up value decides
    model = _model(VERDICT_ONLY, MADE_UP)
    executor = CodeActExecutor(model, samples=0, grounded=False)
    outcome = await executor.decide(node, _ctx(node, pool))
    assert outcome.verdict.value == "false" and "grounded" not in outcome.detail


@shared_loop
async def test_a_window_checks_code_runs_over_the_window_its_text_states(pool):
    """The host sets a range the model copied from elsewhere to the check's own window, runs
    that, and notes it in the trace (``nodes/codeact_window``)."""
    copied = QUERY.replace("print(r['value'])", "span = 'x[30m]'\nprint(span, r['value'])")
    model = _model(copied, TYPED_TRUE)
    node = Node(id="obs_idle", kind="observation", data=["robotics.station_idle_pct"],
                text="The station was idle more than 25% of the time over the last 15 minutes.")  # fmt: skip
    outcome = await CodeActExecutor(model=model, samples=3).decide(node, _ctx(node, pool))
    assert outcome.verdict.value == "true"
    assert outcome.detail["held"] == ["range [30m] is not the window: [15m]"]
    (ran,) = outcome.detail["code"]
    assert "span = 'x[15m]'" in ran["code"] and ran["stdout"].startswith("x[15m] 31.2")
    # the model's history holds the code that ran, not the one it wrote
    assert "x[15m]" in model.seen[1][-2].content
    off = await CodeActExecutor(model=_model(copied, TYPED_TRUE), samples=3,
                                constrained=False).decide(node, _ctx(node, pool))  # fmt: skip
    assert "held" not in off.detail and "x[30m]" in off.detail["code"][0]["code"]


def test_level_4_review_sends_back_code_that_reads_one_of_two_hinted_metrics():
    from sopgraph.nodes.codeact import CodeActRun, review
    from sopgraph.prompts.codeact import FunctionSpec

    schema = {"properties": {"query": {"type": "string"}}}
    specs = {"robotics_execute_query": FunctionSpec(name="robotics_execute_query",
                                                    server="robotics", tool="execute_query",
                                                    input_schema=schema)}  # fmt: skip
    hints = ("robotics.pick_errors", "robotics.pick_attempts")
    run = CodeActRun(_model(), dict.fromkeys(specs), specs, None, hints=hints, constrained=4)
    errors = "r1 = robotics_execute_query(query='sum_over_time(pick_errors[30m])')\nvalue = 1"
    assert review(errors, run) == (
        "reads pick_errors but not pick_attempts: the check's value needs each of its data "
        "(pick_errors, pick_attempts)"
    )
    both = errors + "\nr2 = robotics_execute_query(query='sum_over_time(pick_attempts[30m])')"
    assert review(both, run) is None
    # level 3 (the runs recorded with it replay) does not ask for both
    run.constrained = 3
    assert review(errors, run) is None


def test_level_4_prelude_helpers_refuse_the_other_kind_of_result():
    from sopgraph.prompts.codeact import prelude

    metric = {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {}, "value": [0, "2.5"]}]}}  # fmt: skip
    table = {"columns": ["a"], "rows": [[1]]}
    checked: dict = {}
    exec(prelude("2025-03-19T04:38:56Z", checked=True), checked)  # noqa: S102
    assert checked["series_values"](metric) == [2.5]
    assert checked["table_rows"](table) == [{"a": 1}]
    with pytest.raises(TypeError, match=r"read its numbers with series_values\(\)"):
        checked["table_rows"](metric)
    with pytest.raises(TypeError, match=r"read its rows with table_rows\(\)"):
        checked["series_values"](table)
    # level 3's prelude is the one its runs were recorded with: the other kind reads as nothing
    plain: dict = {}
    exec(prelude("2025-03-19T04:38:56Z"), plain)  # noqa: S102
    assert plain["table_rows"](metric) == [] and plain["series_values"](table) == []
    assert "checked" not in prelude("2025-03-19T04:38:56Z")


def test_level_4_review_sends_back_a_share_of_plan_that_reads_no_plan():
    from sopgraph.nodes.codeact import CodeActRun, review, unread_reference

    text = (
        "Pack-out is understaffed: the headcount present this hour is below 80% of the "
        "planned headcount."
    )
    present = ("r1 = ops_execute_query(sql='SELECT \"present_headcount\" FROM \"staffing\"')\n"
               "value = table_rows(r1)[0]['present_headcount']")  # fmt: skip
    assert unread_reference(present, text) == (
        "reads no planned headcount: the check is a share of the planned headcount, so read it "
        "too (a name with 'plan' in it) and divide"
    )
    both = present.replace('"present_headcount"', '"present_headcount", "planned_headcount"')
    assert unread_reference(both, text) is None
    ratio = "Upstream feed ran below 50% of its planned rate."
    assert unread_reference("r1 = q(sql='SELECT avg(\"upstream_rate_ratio\")')", ratio) is None
    assert "rated throughput" in unread_reference(
        "r1 = q('x')", "below 70% of its rated throughput"
    )
    assert unread_reference(present, "More than 10% of packages recirculated.") is None
    run = CodeActRun(_model(), {"ops_execute_query": None}, {}, None, hints=("ops.staffing",),
                     constrained=4, text=text)  # fmt: skip
    assert review(present, run).startswith("reads no planned headcount")
    run.constrained = 3  # the runs recorded at level 3 replay without it
    assert review(present, run) is None


def _measured(observed: float) -> str:
    return f'{{"observed": {observed}, "comparison": ">", "threshold": 25, "explanation": "x"}}'


TWO_NUMBERS = (
    "```python\nr = robotics_execute_query(metric='station_idle_pct', site='FC1')\n"
    "print(r['value'], 7)\n```"
)


@shared_loop
async def test_level_4_an_answer_printed_nowhere_is_sent_back_once_for_code(pool):
    model = _model(TWO_NUMBERS, MADE_UP, QUERY, _measured(31.2))
    node = _node()
    outcome = await CodeActExecutor(model, samples=0, constrained=4).decide(node, _ctx(node, pool))
    # 0.43 was printed nowhere (31.2 and 7 were): code that prints the value, then the answer
    assert outcome.verdict.value == "true" and outcome.verdict.observed == 31.2
    assert "is no number your code printed" in model.seen[2][-1].content
    assert [step["stdout"] for step in outcome.detail["code"]] == ["31.2 7\n", "31.2\n"]
    # once: the code asked for printed other numbers, and the answer is 0.43 again
    again = _model(TWO_NUMBERS, MADE_UP, QUERY.replace("print(r['value'])", "print(3, 4)"),
                   MADE_UP)  # fmt: skip
    outcome = await CodeActExecutor(again, samples=0, constrained=4).decide(node, _ctx(node, pool))
    # a second time: no value was measured (no_data), with the host's note
    assert outcome.verdict.value == "no_data" and outcome.verdict.observed is None
    assert len(again.seen) == 4 and "still no number" in outcome.detail["grounded"][-1]
    # level 3 (its runs replay): the first answer stands
    level3 = _model(TWO_NUMBERS, MADE_UP)
    outcome = await CodeActExecutor(level3, samples=0, constrained=3).decide(node, _ctx(node, pool))
    assert outcome.verdict.observed == 0.43 and len(level3.seen) == 2


@shared_loop
async def test_level_4_the_answer_reports_the_value_the_code_ended_with(pool):
    code = ("```python\nr = robotics_execute_query(metric='station_idle_pct', site='FC1')\n"
            "print(r['value'])\nvalue = r['value'] - 21.2\nprint(value)\n```")  # fmt: skip
    node = _node()
    model = _model(code, _measured(31.2))  # the reading, not the value computed from it
    outcome = await CodeActExecutor(model, samples=0, constrained=4).decide(node, _ctx(node, pool))
    assert outcome.verdict.value == "false" and outcome.verdict.observed == 10.0
    assert outcome.detail["code"][0]["value"] == 10.0
    # the capture's line is the host's: neither the model nor the trace sees it
    assert outcome.detail["code"][0]["stdout"] == "31.2\n10.0\n"
    assert "__sopgraph_value__" not in model.seen[1][-1].content
    level3 = _model(code, _measured(31.2))
    outcome = await CodeActExecutor(level3, samples=0, constrained=3).decide(node, _ctx(node, pool))
    assert outcome.verdict.value == "true" and "value" not in outcome.detail["code"][0]


def test_level_4_review_lets_a_threshold_that_is_only_compared_in_an_if_run():
    from sopgraph.nodes.codeact import CodeActRun, computes_with, review, threshold_to_avoid

    text = "The station was idle more than 25% of the time."
    verdict = ("r1 = q(query='station_idle_pct')\nidle = sum(series_values(r1))\n"
               "threshold = 25\nif idle > threshold:\n    print('true')\nelse:\n    print('false')")  # fmt: skip
    inline = "r1 = q(query='station_idle_pct')\nprint('true' if r1 > 25 else 'false')"
    arithmetic = "r1 = q(query='pick_errors')\nthreshold = 25\nvalue = r1 / threshold * 100"
    counted = "r1 = q(query='station_idle_pct')\nvalue = len([v for v in r1 if v > 25])"
    assert not computes_with(ast.parse(verdict), 25) and not computes_with(ast.parse(inline), 25)
    assert computes_with(ast.parse(arithmetic), 25) and computes_with(ast.parse(counted), 25)
    run = CodeActRun(_model(), {"q": None}, {}, None, hints=("robotics.station_idle_pct",),
                     stated=(">", 25.0), avoid=threshold_to_avoid((">", 25.0), text), constrained=4)  # fmt: skip
    assert review(verdict, run) is None
    assert "threshold 25" in review(arithmetic.replace("pick_errors", "station_idle_pct"), run)
    assert "threshold 25" in review(counted, run)
    run.constrained = 3  # level 3 sends any use back, as its runs were recorded
    assert "threshold 25" in review(verdict, run)


# alarm ALM-001473 (live, 2026-11-29, level 4): a column queried as a table went back bare
NO_TABLE = ("ToolError: McpError: ops.execute_query failed: Error executing tool execute_query: "
            "query failed: no such table: equipment_id\n(error: ToolError)")  # fmt: skip
OPS = {"ops": {"maintenance_log": ["site", "equipment_id", "component", "performed_at"],
               "stations": ["site", "station", "robot_id"]}}  # fmt: skip


def test_level_5_a_sql_error_naming_what_the_server_lacks_gets_its_catalog():
    from sopgraph.nodes.codeact import catalog_hint

    assert catalog_hint(NO_TABLE, OPS) == "\n(the tables of ops: maintenance_log, stations)"
    column = NO_TABLE.replace("no such table: equipment_id", "no such column: robot_id")
    assert catalog_hint(column, OPS) == (
        "\n(the columns of ops's tables (robot_id is a column of stations): maintenance_log: "
        "site, equipment_id, component, performed_at; stations: site, station, robot_id)"
    )
    # another error, or a server whose catalog is unknown: nothing added
    assert catalog_hint("ToolError: McpError: ops.execute_query failed: syntax error", OPS) == ""
    assert catalog_hint(NO_TABLE.replace("ops.", "metrics."), OPS) == ""
