"""SOP-Bench agents on the test domain through the real tool server (stdio MCP, own process).

The baselines run on the shared scripted chat model: what is tested is the agent loop, the
MCP round trip, the turn budget and the answer parsing, never a model's skill.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fake_chat import ScriptedChatModel
from langchain_core.messages import AIMessage, ToolMessage

from sopgraph.evals.sopbench.agents import FunctionCallingAgent, ReActAgent, system_prompt
from sopgraph.evals.sopbench.compiled import CompiledGraphAgent
from sopgraph.evals.sopbench.domain import DomainError, load_domain
from sopgraph.evals.sopbench.runner import RunSpec, read_records, run_tasks
from sopgraph.evals.sopbench.server import server_config
from sopgraph.nodes.mcp import McpError, McpPool

DATA = Path(__file__).parents[1] / "data" / "sopbench"
REFUND = DATA / "refund_check"
GRAPHS = DATA / "graphs"

pytestmark = pytest.mark.slow


def follows_the_sop(messages):
    """A scripted model that reads the tool results it is sent, as the SOP says to."""
    task = json.loads(messages[1].content.split("\n", 1)[1])
    results = [m for m in messages if isinstance(m, ToolMessage)]
    if not results:
        return AIMessage("", tool_calls=[_call("getOrder", task, "c1")])
    if "No order found" in results[0].content:
        return AIMessage("Thought: not found.\n<refund_decision>Rejected</refund_decision>")
    if len(results) == 1:
        return AIMessage("", tool_calls=[_call("daysSinceDelivery", task, "c2")])
    days = int(re.search(r'"days_since_delivery": (\d+)', results[1].content).group(1))
    decision = "Approved" if days <= 30 else "Rejected"
    return AIMessage(f"<refund_decision>{decision}</refund_decision>")


def _call(name, task, cid):
    return {"name": name, "args": {"order_id": task["order_id"]}, "id": cid, "type": "tool_call"}


async def test_tool_server_serves_the_specs_and_keeps_stdout_clean():
    domain = load_domain(REFUND)
    extra = [f"{DATA / 'spec_mismatch'}:issueRefund"]
    async with McpPool({"sopbench": server_config(domain.path, extra)}) as pool:
        tools = await pool.list_tools("sopbench")
        assert [t.name for t in tools] == ["getOrder", "daysSinceDelivery", "issueRefund"]
        assert tools[0].inputSchema["required"] == ["order_id"]
        # the simulator prints its dataset path on load: the protocol survived it
        got = await pool.call("sopbench", "daysSinceDelivery", {"order_id": "O_002"})
        assert got == {"order_id": "O_002", "days_since_delivery": 45}
        with pytest.raises(McpError, match="No order found for order_id O_005"):
            await pool.call("sopbench", "getOrder", {"order_id": "O_005"})


async def test_compiled_graph_answers_every_task_with_zero_tokens(tmp_path):
    domain = load_domain(REFUND)
    spec = RunSpec(
        domain=domain.name,
        agent="sopgraph",
        domain_tasks=8,
        tasks=[t.task_id for t in domain.tasks],
        seed=0,
    )
    async with CompiledGraphAgent(domain, GRAPHS / "refund_check") as agent:
        records = await run_tasks(domain, agent, domain.tasks, tmp_path, spec)
    assert [r["answer"]["refund_decision"] for r in records] == [
        t.expected["refund_decision"] for t in domain.tasks
    ]
    assert all(r["strict"] and r["tokens"]["total_tokens"] == 0 for r in records)
    not_found = records[4]
    assert [s["node"] for s in not_found["steps"]] == ["obs_order_found", "answer_rejected"]


@pytest.mark.parametrize("cls", [FunctionCallingAgent, ReActAgent])
async def test_baseline_follows_tool_results_to_the_answer(cls):
    domain = load_domain(REFUND)
    model = ScriptedChatModel(responder=follows_the_sop)
    async with cls(domain, model) as agent:
        results = [await agent.solve(t) for t in domain.tasks[:5]]
    assert [r.answer for r in results] == [t.expected for t in domain.tasks[:5]]
    assert all(r.error is None for r in results)
    assert [s["tool"] for s in results[1].steps] == ["getOrder", "daysSinceDelivery"]
    assert "45" in results[1].steps[1]["result"]  # the simulator's answer reached the model
    assert "No order found" in results[4].steps[0]["result"]  # a tool error is shown, not raised
    assert results[0].tokens["total_tokens"] > 0
    assert [t.name for t in model.bound_tools] == ["getOrder", "daysSinceDelivery", "answer"]
    prompt = model.seen[0][0].content
    assert "Look up the order with getOrder" in prompt  # the SOP is in the system prompt
    assert "Approved" not in model.seen[0][1].content  # the answer never reaches the agent


@pytest.mark.parametrize(("cls", "budget"), [(FunctionCallingAgent, 10), (ReActAgent, 15)])
async def test_turn_budget_ends_a_looping_agent(cls, budget):
    domain = load_domain(REFUND)
    loop = AIMessage("", tool_calls=[_call("getOrder", {"order_id": "O_001"}, "c")])
    model = ScriptedChatModel(responses=[loop])
    async with cls(domain, model) as agent:
        result = await agent.solve(domain.tasks[0])
    assert result.answer is None and "turn budget" in result.error
    assert result.turns == budget
    # the repeated call ran once; later ones got the earlier result with a note to answer
    assert "already called getOrder" in result.steps[1]["result"]
    # the last call offered only the typed answer, with a note saying so
    assert "budget is nearly spent" in model.seen[-1][-1].content


@pytest.mark.parametrize("cls", [FunctionCallingAgent, ReActAgent])
async def test_a_repeated_call_forces_the_answer_with_every_result_shown(cls):
    domain = load_domain(REFUND)
    order = _call("getOrder", {"order_id": "O_002"}, "c1")
    days = _call("daysSinceDelivery", {"order_id": "O_002"}, "c2")
    answer = {"name": "answer", "args": {"reasoning": "45 > 30 days", "refund_decision": "Rejected"}, "id": "a",
              "type": "tool_call"}  # fmt: skip
    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[c]) for c in
                                         (order, days, order)] + [AIMessage("", tool_calls=[answer])])  # fmt: skip
    async with cls(domain, model) as agent:
        r = await agent.solve(domain.tasks[1])
    assert r.error is None and r.answer == {"refund_decision": "Rejected"}
    assert r.turns == 4 and r.forced_by == "repeat"
    note = model.seen[-1][-1].content
    # the forced call sees both results it gathered, and only the answer is offered
    assert "already have" in note and '"days_since_delivery": 45' in note and "O_002" in note
    assert "budget" not in note
    assert [getattr(t, "name", None) or t["function"]["name"] for t in model.bound_tools] == [
        "answer"
    ]


@pytest.mark.parametrize("cls", [FunctionCallingAgent, ReActAgent])
async def test_typed_answer_ends_the_run(cls):
    domain = load_domain(REFUND)

    def responder(messages):
        if not any(isinstance(m, ToolMessage) for m in messages):
            return AIMessage(
                "", tool_calls=[_call("daysSinceDelivery", {"order_id": "O_002"}, "c")]
            )
        args = {"reasoning": "delivered 45 days ago: over 30", "refund_decision": "Rejected"}
        return AIMessage(
            "", tool_calls=[{"name": "answer", "args": args, "id": "a", "type": "tool_call"}]
        )

    async with cls(domain, ScriptedChatModel(responder=responder)) as agent:
        r = await agent.solve(domain.tasks[1])
    assert r.error is None and r.answer == {"refund_decision": "Rejected"} and r.turns == 2


def test_answer_schema_takes_the_sop_values_never_the_data():
    from sopgraph.evals.sopbench.answer_schema import allowed_values, answer_schema

    schema = answer_schema(load_domain(REFUND)).model_json_schema()
    assert schema["title"] == "answer"
    # the reasoning comes first, so a grammar-bound model reasons before it decides
    assert schema["required"] == ["reasoning", "refund_decision"]
    assert schema["properties"]["refund_decision"]["enum"] == ["Rejected", "Approved"]
    assert allowed_values('Set the status to "open".', "status") == []  # one value: free text
    assert allowed_values('The risk is "low" or "high". Say "hello".', "risk_level") == []
    assert allowed_values('The risk level is "low" or "high".', "risk_level") == ["low", "high"]


def test_unquoted_values_come_from_the_drafting_reader():
    from sopgraph.evals.sopbench.answer_schema import allowed_values

    # a definitions list under a heading naming the output (its -us word kept whole)
    listed = "## Final status\n- Approved: every check passes\n- Rejected: a check fails\n"
    assert allowed_values(listed, "final status") == ["Approved", "Rejected"]
    # "one of A, B or C" after a sentence naming an outcome: the output's own name or none
    step = "1. If the item breaks a rule, review it.\n"
    said = step + "The final decision is one of Keep, Remove or Escalate."
    assert allowed_values(said, "final_decision") == ["Keep", "Remove", "Escalate"]
    assert allowed_values(step + "The output is one of Keep or Remove.", "verdict_label") == [
        "Keep",
        "Remove",
    ]
    # values stated for another output are not this one's
    assert allowed_values(step + "The risk level is one of Low or High.", "final_decision") == []
    assert allowed_values("No procedure here.", "final_decision") == []  # the reader refuses


async def test_unparsable_answer_and_react_without_tools_are_not_completed():
    domain = load_domain(REFUND)
    async with FunctionCallingAgent(domain, ScriptedChatModel(responses=[AIMessage("yes")])) as a:
        r = await a.solve(domain.tasks[0])
    assert r.answer is None and "lacks ['refund_decision']" in r.error
    guess = AIMessage("<refund_decision>Approved</refund_decision>")
    async with ReActAgent(domain, ScriptedChatModel(responses=[guess])) as a:
        r = await a.solve(domain.tasks[0])
    assert r.error == "answered without calling a tool"


async def test_bloat_offers_distractors_to_the_agent():
    domain = load_domain(REFUND)
    model = ScriptedChatModel(responder=follows_the_sop)
    extra = [f"{DATA / 'spec_mismatch'}:issueRefund"]
    async with FunctionCallingAgent(domain, model, extra) as agent:
        r = await agent.solve(domain.tasks[0])
    assert r.answer == {"refund_decision": "Approved"}
    offered = [t.name for t in model.bound_tools]
    assert offered == ["getOrder", "daysSinceDelivery", "issueRefund", "answer"]


class _Interrupting:
    """Solves tasks through the compiled graph, but is killed after ``stop_after`` of them."""

    def __init__(self, inner, stop_after):
        self.inner, self.stop_after, self.solved = inner, stop_after, []

    async def solve(self, task):
        if len(self.solved) == self.stop_after:
            raise KeyboardInterrupt
        self.solved.append(task.task_id)
        return await self.inner.solve(task)


async def test_interrupted_run_resumes_from_its_records(tmp_path):
    domain = load_domain(REFUND)
    tasks = domain.tasks
    spec = RunSpec(
        domain=domain.name,
        agent="sopgraph",
        domain_tasks=8,
        tasks=[t.task_id for t in tasks],
        seed=0,
    )
    async with CompiledGraphAgent(domain, GRAPHS / "refund_check") as graph:
        first = _Interrupting(graph, 3)
        with pytest.raises(KeyboardInterrupt):
            await run_tasks(domain, first, tasks, tmp_path, spec)
        assert len(read_records(tmp_path / "records.jsonl")) == 3
        second = _Interrupting(graph, 99)
        records = await run_tasks(domain, second, tasks, tmp_path, spec)
    assert second.solved == [t.task_id for t in tasks[3:]]  # nothing done twice
    assert [r["task_id"] for r in records] == [t.task_id for t in tasks]
    other = spec.model_copy(update={"seed": 5})
    with pytest.raises(DomainError, match="holds another run \\(different seed\\)"):
        await run_tasks(domain, second, tasks, tmp_path, other)


def test_a_recorded_run_resumes_in_another_cassette_mode_but_not_with_another_model(tmp_path):
    from sopgraph.evals.sopbench.runner import RunSpec, open_run

    def spec(model: str) -> RunSpec:
        return RunSpec(domain="d", agent="fc", domain_tasks=2, tasks=["a"], seed=0, model=model)

    open_run(tmp_path, spec("local (json-schema) (cassette record)"))
    assert open_run(tmp_path, spec("local (json-schema) (cassette fill)")) == []
    assert open_run(tmp_path, spec("local (json-schema)")) == []
    with pytest.raises(DomainError, match="different model"):
        open_run(tmp_path, spec("openai:gpt (cassette fill)"))


def test_cli_runs_resumes_and_tables(tmp_path, capsys):
    from sopgraph.cli import main

    args = ["bench", "sopbench", str(REFUND), "--graphs", str(GRAPHS), "--out", str(tmp_path)]
    assert main([*args, "--tasks", "4", "--seed", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (run,) = out["runs"]
    assert run["sample"] == "4 of 8, seed 3"
    assert run["summary"]["tsr_strict"] == 1.0 and run["summary"]["tokens_per_task"] == 0
    # the same command again: every task is already recorded, nothing runs
    assert main([*args, "--tasks", "4", "--seed", "3"]) == 0
    captured = capsys.readouterr()
    assert "task " not in captured.err and "| refund_check | sopgraph |" in captured.out
    assert main(["bench", "sopbench", "--table", "--out", str(tmp_path)]) == 0
    assert "| 4 of 8, seed 3 | 100.0 |" in capsys.readouterr().out


def test_cli_says_a_domain_without_a_graph_needs_a_model_to_make_one(tmp_path, capsys, monkeypatch):
    from sopgraph.cli import main

    monkeypatch.delenv("SOPGRAPH_MODEL", raising=False)
    code = main(["bench", "sopbench", str(REFUND), "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "refund_check: no hand-written graph, so it is made by a model" in err[0]
    assert "set SOPGRAPH_MODEL" in err[0] and not any(tmp_path.iterdir())  # nothing written


def test_system_prompt_names_the_output_tags():
    domain = load_domain(REFUND)
    assert "<refund_decision>...</refund_decision>" in system_prompt(domain)
    assert "Thought" in system_prompt(domain, react=True)


def test_unreachable_model_stops_the_run_and_keeps_finished_tasks(tmp_path, capsys, monkeypatch):
    import httpx
    import openai

    from sopgraph.cli import main

    answers = iter(["<refund_decision>Approved</refund_decision>"])

    def responder(messages):
        if not any(isinstance(m, ToolMessage) for m in messages):
            return AIMessage("", tool_calls=[_call("getOrder", {"order_id": "O_001"}, "c")])
        try:
            return AIMessage(next(answers))
        except StopIteration:
            raise openai.APIConnectionError(request=httpx.Request("POST", "http://x")) from None

    monkeypatch.setenv("SOPGRAPH_MODEL", "openai:scripted-in-test")
    monkeypatch.setattr(
        "sopgraph.nodes.models.chat_model", lambda: ScriptedChatModel(responder=responder)
    )
    args = ["bench", "sopbench", str(REFUND), "--agent", "fc", "--out", str(tmp_path)]
    assert main([*args, "--tasks", "3"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("error: ") and "could not be reached" in err and "resume" in err
    (records,) = tmp_path.glob("refund_check/fc-n3-s0/records.jsonl")
    assert len(read_records(records)) == 1  # the finished task is kept, the failed one is not


def test_cli_without_a_model_is_one_line(tmp_path, capsys, monkeypatch):
    from sopgraph.cli import main

    monkeypatch.delenv("SOPGRAPH_MODEL", raising=False)
    code = main(["bench", "sopbench", str(REFUND), "--agent", "react", "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error: ")


def test_local_chat_format_gets_tool_choice_and_results_as_user_turns():
    from langchain_core.messages import HumanMessage
    from langchain_openai import ChatOpenAI

    from sopgraph.evals.sopbench.agents import offering_tools, tool_results_as_text

    openai_like = ChatOpenAI(model="m", api_key="k", base_url="http://127.0.0.1:9/v1")
    assert offering_tools(openai_like).model_kwargs["tool_choice"] == "auto"
    scripted = ScriptedChatModel(responses=[AIMessage("x")])
    assert offering_tools(scripted) is scripted  # no model_kwargs: nothing to add
    view = tool_results_as_text(
        [
            AIMessage("", tool_calls=[_call("getOrder", {"order_id": "O_1"}, "c")]),
            ToolMessage('{"a": 1}', tool_call_id="c", name="getOrder"),
        ]
    )
    assert isinstance(view[1], HumanMessage) and view[1].content == 'Result of getOrder: {"a": 1}'


def test_react_asks_the_local_model_for_a_thought_before_each_call(monkeypatch):
    from langchain_openai import ChatOpenAI

    from sopgraph.evals.sopbench.agents import thoughts_in_calls
    from sopgraph.nodes.models import THOUGHT_KEY

    openai_like = ChatOpenAI(model="m", api_key="k", base_url="http://127.0.0.1:9/v1")
    monkeypatch.setenv("SOPGRAPH_MODEL", "openai:some-hosted-model")
    assert thoughts_in_calls(openai_like) is openai_like  # a hosted model writes text
    monkeypatch.setenv("SOPGRAPH_MODEL", "local")
    monkeypatch.setenv("SOPGRAPH_LOCAL_TOOL_FORMAT", "json-schema")
    assert thoughts_in_calls(openai_like).extra_body == {THOUGHT_KEY: True}
    monkeypatch.setenv("SOPGRAPH_LOCAL_TOOL_FORMAT", "hermes")
    assert thoughts_in_calls(openai_like) is openai_like  # hermes replies have text already


async def test_a_react_thought_is_kept_with_its_call_and_the_answer_stays_typed():
    def responder(messages):
        results = [m for m in messages if isinstance(m, ToolMessage)]
        if not results:
            return AIMessage("I need the order first.", tool_calls=[_call("getOrder", {"order_id": "O_001"}, "c1")])  # fmt: skip
        answer = {"reasoning": "delivered, within 30 days", "refund_decision": "Approved"}
        call = {"name": "answer", "args": answer, "id": "c2", "type": "tool_call"}
        return AIMessage("I can decide now.", tool_calls=[call])

    domain = load_domain(REFUND)
    async with ReActAgent(domain, ScriptedChatModel(responder=responder)) as agent:
        r = await agent.solve(domain.tasks[0])
    assert r.answer == {"refund_decision": "Approved"}
    assert r.steps[0]["thought"] == "I need the order first." and r.steps[0]["tool"] == "getOrder"
    assert json.loads(r.final_text)["refund_decision"] == "Approved"  # not the last thought


@pytest.mark.parametrize("cls", [FunctionCallingAgent, ReActAgent])
async def test_tool_results_reach_the_model_as_user_turns(cls):
    from langchain_core.messages import HumanMessage

    def responder(messages):
        if any(isinstance(m, ToolMessage) for m in messages):
            return AIMessage("the tool role reached the model")
        seen = [m.content for m in messages if isinstance(m, HumanMessage)]
        if any(s.startswith("Result of getOrder:") for s in seen):
            return AIMessage("<refund_decision>Approved</refund_decision>")
        return AIMessage("", tool_calls=[_call("getOrder", {"order_id": "O_001"}, "c")])

    domain = load_domain(REFUND)
    model = ScriptedChatModel(responder=responder)
    async with cls(domain, model, tool_results_in_user_turns=True) as agent:
        r = await agent.solve(domain.tasks[0])
    assert r.answer == {"refund_decision": "Approved"}
    assert r.steps[0]["result"] == '{"order_id": "O_001", "status": "delivered"}'  # record kept


async def test_budget_stops_starting_tasks(tmp_path):
    domain = load_domain(REFUND)
    spec = RunSpec(
        domain=domain.name,
        agent="sopgraph",
        domain_tasks=8,
        tasks=[t.task_id for t in domain.tasks],
        seed=0,
    )
    async with CompiledGraphAgent(domain, GRAPHS / "refund_check") as agent:
        assert await run_tasks(domain, agent, domain.tasks, tmp_path, spec, budget_s=0) == []
        records = await run_tasks(domain, agent, domain.tasks, tmp_path, spec, budget_s=3600)
    assert len(records) == 8


def test_steps_pair_repeated_call_ids_with_their_own_results():
    """llama.cpp's call ids repeat when the call does: each call keeps its own result."""
    from sopgraph.evals.sopbench.agents import _steps

    call = {"name": "getOrder", "args": {"order_id": "O_1"}, "id": "call_0", "type": "tool_call"}
    messages = [
        AIMessage("", tool_calls=[call]),
        ToolMessage('{"ok": 1}', tool_call_id="call_0"),
        AIMessage("", tool_calls=[call]),
        ToolMessage('{"ok": 1} (already called)', tool_call_id="call_0"),
        AIMessage("", tool_calls=[{**call, "id": "call_9"}]),
    ]
    assert [s["result"] for s in _steps(messages)] == [
        '{"ok": 1}',
        '{"ok": 1} (already called)',
        None,
    ]
