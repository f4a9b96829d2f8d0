"""The LLM-agent baseline on the enterprise task set: the FC and ReAct agents over the real
enterprise server started as the task's persona (a scripted model plays the agent: what the
local model does is measured live, docs/access-control.md), and the scoring of its answers."""

from __future__ import annotations

from typing import Any

import pytest
from fake_chat import ScriptedChatModel
from langchain_core.messages import AIMessage, ToolMessage

from sopgraph.evals.enterprise_agent import EnterpriseFC, EnterpriseReAct, same_value, score
from sopgraph.evals.enterprise_tasks import load_tasks, main

TASKS = {t["id"]: t for t in load_tasks()}


def _call(name: str, args: dict[str, Any], i: str) -> dict[str, Any]:
    return {"name": name, "args": args, "id": i, "type": "tool_call"}


def plays(call: tuple[str, dict[str, Any]] | None, answer: dict[str, str]):
    """A model that makes ``call`` (if any), then answers ``answer`` whatever the tool said."""

    def responder(messages):
        if call is not None and not any(isinstance(m, ToolMessage) for m in messages):
            return AIMessage("", tool_calls=[_call(call[0], call[1], "c1")])
        args = {"reasoning": "from the tool", **answer}
        return AIMessage("", tool_calls=[_call("answer", args, "a1")])

    return ScriptedChatModel(responder=responder)


def test_same_value_reads_numbers_lists_and_words():
    assert same_value("3 days", 3) and same_value("120,301", 120301) and not same_value("4", 3)
    assert same_value("emp_1086, emp_0136", ["emp_0136", "emp_1086"])
    assert not same_value("emp_0136", ["emp_0136", "emp_1086"])
    assert same_value("Resolved.", "resolved") and not same_value("open", "resolved")
    assert not same_value("", None)


def test_score_per_kind_of_task():
    ok = {"outcome": "answered", "steps": []}
    assert score(TASKS["s01"], {**ok, "answer": "3"})
    assert not score(TASKS["s01"], {**ok, "answer": "5"})
    assert not score(TASKS["s01"], {"outcome": "refused", "answer": ""})
    # an SOP's question: the observed value or the yes/no its action means
    assert score(TASKS["s04"], {**ok, "answer": "yes"})
    assert score(TASKS["s04"], {**ok, "answer": "120301"})
    assert not score(TASKS["s04"], {**ok, "answer": "no"})
    assert score(TASKS["f01"], {"outcome": "refused", "answer": ""})
    assert not score(TASKS["f01"], {**ok, "answer": "yes"})  # a guess is not a refusal
    assert score(TASKS["u01"], {"outcome": "not_available", "answer": ""})
    assert not score(TASKS["u01"], {**ok, "answer": "0"})
    assert score(TASKS["u03"], {"outcome": "not_available", "answer": ""})
    assert score(TASKS["u03"], {**ok, "answer": "0"})
    # a change counts only when the tool made it: saying so is not enough
    assert not score(TASKS["c04"], {**ok, "answer": "low"})
    done = [{"tool": "update_ticket", "args": {"ticket_id": "900", "priority": "low"},
             "result": '{"id": "900", "priority": "low"}'}]  # fmt: skip
    assert score(TASKS["c04"], {**ok, "answer": "low", "steps": done})
    failed = [{**done[0], "result": "Error: access denied: update_ticket ..."}]
    assert not score(TASKS["c04"], {**ok, "answer": "low", "steps": failed})
    closed = [{"tool": "close_ticket", "args": {"ticket_id": "717", "resolution": "x"},
               "result": '{"id": "717", "status": "closed"}'}]  # fmt: skip
    assert score(TASKS["c03"], {**ok, "answer": "closed", "steps": closed})
    assert not score(TASKS["c03"], {**ok, "answer": "closed", "steps": []})


@pytest.mark.parametrize("cls", [EnterpriseFC, EnterpriseReAct])
async def test_agent_acts_as_the_persona_through_the_real_server(tmp_path, cls):
    audit = tmp_path / "audit.jsonl"
    fields = {"emp_id": "emp_0675", "fields": ["Remaining Vacation Leaves"]}
    model = plays(("get_employee", fields), {"outcome": "answered", "answer": "3"})
    async with cls("emp_0675", model, audit) as agent:
        r = await agent.solve(TASKS["s01"])
    assert r.error is None and r.answer == {"outcome": "answered", "answer": "3"}
    assert '"Remaining Vacation Leaves": 3' in r.steps[0]["result"]  # the server's answer
    assert "emp_0675" in model.seen[0][0].content  # the persona is in the system prompt
    assert model.seen[0][1].content == TASKS["s01"]["question"]
    assert "answer" in [t.name for t in model.bound_tools]
    assert "get_employee" in audit.read_text()  # the server logged the agent's call


async def test_the_server_refuses_the_agent_what_it_refuses_the_persona(tmp_path):
    fields = {"emp_id": "emp_0136", "fields": ["Salary"]}
    model = plays(("get_employee", fields), {"outcome": "refused", "answer": ""})
    async with EnterpriseFC("emp_0675", model, tmp_path / "audit.jsonl") as agent:
        r = await agent.solve(TASKS["f01"])
    assert "access denied" in r.steps[0]["result"] and "120301" not in r.steps[0]["result"]
    got = {**r.answer, "steps": r.steps}
    assert score(TASKS["f01"], got)


def test_cli_scores_a_scripted_agent(tmp_path, capsys, monkeypatch):
    def responder(messages):  # answers every question "3" without a call
        args = {"reasoning": "-", "outcome": "answered", "answer": "3"}
        return AIMessage("", tool_calls=[_call("answer", args, "a1")])

    monkeypatch.setenv("SOPGRAPH_MODEL", "local")  # never started: chat_model is the script
    monkeypatch.setattr(
        "sopgraph.nodes.models.chat_model", lambda: ScriptedChatModel(responder=responder)
    )
    assert main(["--agent", "fc", "--only", "s01,s09,f01"]) == 0
    out = capsys.readouterr().out
    assert "enterprise tasks, LLM agent fc" in out and ": 1/3 correct" in out
    assert "wrong: s09" in out and "wrong: f01" in out


def test_cli_without_a_model_is_one_line(capsys, monkeypatch):
    monkeypatch.delenv("SOPGRAPH_MODEL", raising=False)
    assert main(["--agent", "fc", "--only", "s01"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: no model configured") and "\n" not in err
