"""The CodeAct sub-agent driven by scripted models against real MCP servers (tests/servers)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import pytest_asyncio
from dspy.utils import DummyLM
from fake_chat import ScriptedAgentModel, ScriptedChatModel
from langchain_core.messages import AIMessage

from sopgraph.graphs.executors import ToolContext, Unavailable
from sopgraph.graphs.model import Node
from sopgraph.nodes.codeact import CodeActExecutor
from sopgraph.nodes.codeact_loop import clean_traceback, extract_code
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
    text = "The station was idle more than {idle_pct_threshold}% of the time."
    return Node(id="obs_idle", kind="observation", text=text, data=list(data))


def _ctx(node: Node, pool) -> ToolContext:
    return ToolContext(
        node_id=node.id, text=node.text.replace("{idle_pct_threshold}", "25"),
        params={"idle_pct_threshold": 25}, parents={},
        input={"type": "station_idle", "site": "FC1", "timestamp": "2025-01-01T10:00:00Z"},
        run_id="t1", mcp=pool, node=node,
    )  # fmt: skip


def _model(*replies: str) -> ScriptedChatModel:
    return ScriptedChatModel(responses=[AIMessage(r) for r in replies])


@shared_loop
async def test_two_turn_answer_is_a_verdict_with_a_full_trace(pool):
    model = _model(QUERY, ANSWER_TRUE)
    outcome = await CodeActExecutor(model, samples=0).decide(_node(), _ctx(_node(), pool))

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
    assert "ops_execute_query" not in system and '"site": "FC1"' in system
    assert "Time of the input (NOW): 2025-01-01T10:00:00Z" in system
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
    outcome = await CodeActExecutor(model, samples=0).decide(_node(), _ctx(_node(), pool))

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
    outcome = await CodeActExecutor(model, samples=0).decide(_node(), _ctx(_node(), pool))

    assert outcome.verdict.value == "no_data"
    (call,) = outcome.detail["mcp_calls"]
    assert "backend down" in call["error"] and call["result"] is None
    assert "failed:" in outcome.detail["code"][0]["stdout"] and outcome.detail["code"][0]["ok"]


@shared_loop
async def test_uncaught_tool_error_reaches_the_model_as_an_error(pool):
    code = "```python\nprint(robotics_broken_query(metric='station_idle_pct'))\n```"
    model = _model(code, QUERY, ANSWER_TRUE)
    outcome = await CodeActExecutor(model, samples=0).decide(_node(), _ctx(_node(), pool))

    assert outcome.verdict.value == "true"
    assert not outcome.detail["code"][0]["ok"]
    assert "ToolError" in model.seen[1][-1].content and "backend down" in model.seen[1][-1].content


@shared_loop
async def test_turn_budget_exhausted_is_unresolved_with_a_reason(pool):
    model = _model(QUERY)  # writes code forever
    outcome = await CodeActExecutor(model, max_turns=3, samples=0).decide(
        _node(), _ctx(_node(), pool)
    )

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
    outcome = await CodeActExecutor(model, samples=0).decide(_node(), _ctx(_node(), pool))

    assert outcome.verdict is None and "neither code nor ANSWER" in outcome.error
    assert outcome.detail["turns"] == 2 and outcome.detail["code"] == []
    assert "neither a ```python code block" in model.seen[1][-1].content


@shared_loop
async def test_forbidden_tool_is_refused_and_never_reaches_the_server(pool):
    code = "```python\nprint(call_tool('ops_execute_query', {'metric': 'fault_count', 'site': 'FC1'}))\n```"
    model = _model(code, "ANSWER: I could not read it.\nVERDICT: no_data")
    before = pool.calls
    outcome = await CodeActExecutor(model, samples=0).decide(_node(), _ctx(_node(), pool))

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
    ex = CodeActExecutor(model, extractor=VerdictExtractor(lm=lm), samples=0)
    outcome = await ex.decide(_node(), _ctx(_node(), pool))

    assert outcome.verdict.value == "false" and outcome.verdict.observed == 12.5
    assert outcome.detail["extract"]["source"] == "lm"


@shared_loop
async def test_free_text_answer_without_an_lm_is_unresolved(pool):
    model = _model(QUERY, "ANSWER: it was 31.2 percent.")
    outcome = await CodeActExecutor(model, samples=0).decide(_node(), _ctx(_node(), pool))
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
    outcome = await CodeActExecutor(model=model, samples=0).decide(node, _ctx(node, pool))
    assert outcome.verdict.value == "true" and outcome.verdict.observed == 31.2
    assert outcome.verdict.explanation == "idle 31.2% is above 25%"
    d = outcome.detail
    assert d["turns"] == 2 and d["extract"] == {"source": "typed"}  # no extraction call
    # the step that read data is followed by the request for the typed answer
    assert "Answer now with one JSON object" in model.seen[1][-1].content


@shared_loop
async def test_an_answer_before_any_function_call_goes_back(pool):
    model = _model(ANSWER_TRUE, QUERY, TYPED_TRUE)
    node = _node()
    outcome = await CodeActExecutor(model=model, samples=0).decide(node, _ctx(node, pool))
    assert outcome.verdict.value == "true" and outcome.detail["turns"] == 3
    said = model.seen[1][-1].content
    assert said.startswith("Your answer was not taken (answer check `looked_before_answering`")
    (refused,) = outcome.detail["refused"]
    assert (refused["turn"], refused["check"]) == (1, "looked_before_answering")
    assert refused["problem"].startswith("you have not read any data yet")
    assert [c["function"] for c in outcome.detail["mcp_calls"]] == ["robotics_execute_query"]

    stubborn = _model(*[ANSWER_TRUE] * 3)  # answers again without looking: no verdict, and why
    executor = CodeActExecutor(model=stubborn, samples=0, max_turns=3)
    outcome = await executor.decide(node, _ctx(node, pool))
    assert outcome.verdict is None and outcome.detail["turns"] == 3
    assert outcome.error.startswith(
        "codeact: answer check looked_before_answering failed on the last reply"
    )


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
    outcome = await CodeActExecutor(model=model, samples=0).decide(node, _ctx(node, pool))
    step = outcome.detail["code"][0]
    assert step["ok"], step["error"]
    assert step["stdout"] == "2025-01-01T10:00:00Z\n[2.5]\n[{'a': 1, 'b': 2}]\n"
    assert step["code"] == code.split("\n", 1)[1].rsplit("\n", 1)[0]  # the model's code only


@shared_loop
async def test_catalog_calls_alone_do_not_make_the_answer_due(pool):
    listing = "```python\nprint(robotics_list_metrics())\n```"
    model = _model(listing, QUERY, TYPED_TRUE)
    node = _node()
    outcome = await CodeActExecutor(model=model, samples=0).decide(node, _ctx(node, pool))
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
    measured = '{"observed": 31.2, "comparison": ">", "threshold": 3, "explanation": "no"}'
    model = _model(QUERY, measured)
    node = _node()
    outcome = await CodeActExecutor(model=model, samples=0).decide(node, _ctx(node, pool))
    # the model's "no" does not decide: its value and comparison do, 31.2 > 25 holds
    assert outcome.verdict.value == "true" and outcome.verdict.observed == 31.2
    measured = measured.replace("31.2", "0.76")
    model = _model(QUERY.replace("print(r['value'])", "print(0.76)"), measured)
    outcome = await CodeActExecutor(model=model, samples=0).decide(node, _ctx(node, pool))
    assert outcome.verdict.value == "false" and outcome.verdict.observed == 0.76


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


@shared_loop
async def test_a_repeated_reply_is_not_run_and_the_next_is_sampled(pool):
    broken = "```python\nr1 = robotics_execute_query(query='x'\nprint(r1)\n```"  # a SyntaxError
    model = _model(broken, broken, QUERY, ANSWER_TRUE)
    outcome = await CodeActExecutor(model, samples=0).decide(_node(), _ctx(_node(), pool))
    assert outcome.verdict.value == "true"
    # the broken code ran once; its greedy repeat was not run, and the reply after it was
    # sampled (temperature, a seed: a recording replays)
    assert [step["ok"] for step in outcome.detail["code"]] == [False, True]
    sampled = [(k.get("temperature"), k.get("seed")) for k in model.recorder.kwargs]
    assert sampled == [(None, None), (None, None), (0.5, 1), (None, None)]


# -- one mechanism: the SOP's parameter, best of N, answer checks; no host edits -------------


@shared_loop
async def test_the_threshold_is_the_parameter_the_node_names(pool):
    said = '{"observed": 31.2, "comparison": ">", "threshold": 90, "explanation": "idle"}'
    node = _node()
    outcome = await CodeActExecutor(_model(QUERY, said), samples=0).decide(node, _ctx(node, pool))
    # the model's 90 does not decide: the node names idle_pct_threshold, 25, and 31.2 > 25
    assert outcome.verdict.value == "true" and outcome.verdict.threshold == 25.0
    # a node naming no parameter: the model's own threshold is the comparison's
    bare = Node(id="obs_idle", kind="observation", text="Idle too long.", data=node.data)
    ctx = _ctx(bare, pool)
    outcome = await CodeActExecutor(_model(QUERY, said), samples=0).decide(bare, ctx)
    assert outcome.verdict.value == "false" and outcome.verdict.threshold is None


def test_a_local_models_answer_schema_fixes_the_nodes_parameter():
    from sopgraph.nodes.codeact import node_threshold, typed_answer_model
    from sopgraph.nodes.models import Settings, chat_model
    from sopgraph.prompts.codeact import answer_schema

    assert node_threshold(_node(), {"idle_pct_threshold": 25, "other": 3}) == 25.0
    assert node_threshold(_node(), {"idle_pct_threshold": "high"}) is None
    schema = answer_schema(25.0)
    assert schema["properties"]["threshold"] == {"const": 25.0}
    bound = typed_answer_model(chat_model(Settings(model="local")), schema)
    assert bound.kwargs["extra_body"]["response_format"]["schema"] == schema


def test_now_is_the_first_date_time_of_the_input():
    from sopgraph.nodes.codeact import input_time

    assert input_time({"id": "A-1", "at": "2025-01-01T10:00:00Z", "b": "2026-01-01"}) == (
        "2025-01-01T10:00:00Z"
    )
    assert input_time({"order": "12345678901", "note": "not a time at all"}) == ""


FAILS = (
    "```python\nr = robotics_execute_query(metric='station_idle_pct', site='FC1')\n"
    "print(r['nope'])\n```"
)


@shared_loop
async def test_best_of_n_puts_a_reply_that_reads_data_in_place_of_one_that_fails(pool):
    model = _model(FAILS, FAILS.replace("nope", "nada"), QUERY, TYPED_TRUE)
    node = _node()
    outcome = await CodeActExecutor(model=model, samples=3).decide(node, _ctx(node, pool))
    assert outcome.verdict.value == "true" and outcome.detail["turns"] == 2
    # the draws answered the same prompt as the first reply, each at a seed of its own
    assert model.seen[0] == model.seen[1] == model.seen[2]
    drawn = [(k.get("temperature"), k.get("seed")) for k in model.recorder.kwargs]
    assert drawn == [(None, None), (0.5, 1), (0.5, 2), (None, None)]
    assert outcome.detail["sampled"] == [{"turn": 1, "rewards": [0.0, 1.0], "chosen": 2}]
    # the chosen reply took the first's place: its code alone is in the trace, run once
    (ran,) = outcome.detail["code"]
    assert ran["ok"] and ran["code"] in QUERY and ran["stdout"] == "31.2\n"
    assert model.seen[3][-2].content == QUERY and "Output:\n31.2" in model.seen[3][-1].content
    replies = (FAILS, FAILS, QUERY, TYPED_TRUE)  # every draw's tokens count
    assert outcome.detail["output_tokens"] == sum(len(r.split()) for r in replies)


@shared_loop
async def test_when_no_draw_reads_data_the_first_reply_stands(pool):
    model = _model(FAILS, FAILS, FAILS, QUERY, TYPED_TRUE)
    node = _node()
    outcome = await CodeActExecutor(model=model, samples=2).decide(node, _ctx(node, pool))
    assert outcome.detail["sampled"][0] == {"turn": 1, "rewards": [0.0, 0.0], "chosen": None}
    first, second = outcome.detail["code"]
    assert not first["ok"] and "KeyError" in first["error"] and second["ok"]
    assert outcome.verdict.value == "true"


MADE_UP = '{"observed": 0.43, "comparison": ">", "threshold": 25, "explanation": "x"}'


@shared_loop
async def test_an_observed_value_the_code_never_printed_goes_back(pool):
    printed = QUERY.replace("print(r['value'])", "print(r['value'] / 100)")  # 0.312
    model = _model(QUERY, MADE_UP, printed, TYPED_TRUE.replace("31.2", "0.312"))
    node = _node()
    outcome = await CodeActExecutor(model=model, samples=0).decide(node, _ctx(node, pool))
    said = model.seen[2][-1].content
    assert "answer check `observed_was_printed`: observed 0.43 is not a number your code" in said
    assert outcome.detail["refused"][0]["check"] == "observed_was_printed"
    assert outcome.verdict.observed == 0.312 and outcome.detail["turns"] == 4
    # the host changed neither: the code ran as written, the answer is the model's
    assert [step["code"] for step in outcome.detail["code"]] == [
        QUERY.split("\n", 1)[1].rsplit("\n", 1)[0],
        printed.split("\n", 1)[1].rsplit("\n", 1)[0],
    ]
    # refused on the last reply: no verdict, and the check named
    model = _model(QUERY, MADE_UP)
    outcome = await CodeActExecutor(model=model, samples=0, max_turns=2).decide(
        node, _ctx(node, pool)
    )
    assert outcome.verdict is None
    assert outcome.error.startswith("codeact: answer check observed_was_printed failed")
