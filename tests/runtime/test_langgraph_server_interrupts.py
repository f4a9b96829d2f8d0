"""Interrupts of the generic ``sop`` graph, given its SOP per run, as the real server reports them.

``runtime/studio.py``'s pattern: the default ``sop`` assistant, the SOP named in the run's
``configurable.sop``. A state read carries no run configuration, yet ``threads.get_state`` must
still show the paused gated action (``next``, ``tasks[*].interrupts``, ``interrupts``) and a
``Command(resume=...)`` through the SDK must finish the run. The resume carries the gate's
key, read from the interrupt's value (issue 53): a plain "approve" is refused and asked again.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from gated_sop import INPUT, gated_sop
from langgraph.store.memory import InMemoryStore
from langgraph_sdk.schema import Command

from sopgraph.evals.langgraph_dev import CONFIG, LangGraphDev
from sopgraph.runtime import studio


async def test_factory_remembers_the_sop_a_thread_runs(tmp_path, monkeypatch):
    """Without a server: the factory as the server calls it, with the server's store."""
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    sop = gated_sop(tmp_path)
    store = InMemoryStore()
    run = SimpleNamespace(store=store, access_context="threads.create_run")
    read = SimpleNamespace(store=store, access_context="threads.read")
    thread = {"thread_id": "t1"}

    assert "sop_error" in (await studio.served_sop({"configurable": thread}, read)).nodes
    named = {"configurable": {**thread, "sop": str(sop)}}
    assert "act_standby" in (await studio.served_sop(named, run)).nodes
    # a read, and a resume, that name no SOP get the thread's
    assert "act_standby" in (await studio.served_sop({"configurable": thread}, read)).nodes
    assert "act_standby" in (await studio.served_sop({"configurable": thread}, run)).nodes
    # a read prefers what the thread ran over an assistant's default SOP
    default = {"configurable": {**thread, "sop": "fc_alarm_triage"}}
    assert "act_standby" in (await studio.served_sop(default, read)).nodes
    other = {"configurable": {"thread_id": "t2"}}
    assert "sop_error" in (await studio.served_sop(other, read)).nodes


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> tuple[LangGraphDev, str]:
    """The repository's langgraph.json on a real ``langgraph dev``; the gated SOP's path."""
    work = tmp_path_factory.mktemp("langgraph-interrupts")
    sop = gated_sop(work)
    home = work / "home"
    home.mkdir()
    with LangGraphDev(CONFIG, workdir=work, env={"SOPGRAPH_HOME": str(home)}) as srv:
        yield srv, str(sop)


async def _bound(client, thread: str, decision: str) -> Command:
    """The resume answering ``thread``'s pending gate with ``decision``, bound to its key."""
    (pending,) = (await client.threads.get_state(thread))["interrupts"]
    return Command(resume={"decision": decision, "key": pending["value"]["key"]})


async def _pause(client, sop: str) -> str:
    """Run the SOP on the default ``sop`` assistant, SOP given per run, up to its gate."""
    thread = (await client.threads.create())["thread_id"]
    values = await client.runs.wait(
        thread, "sop", input={"input": INPUT}, config={"configurable": {"sop": sop}}
    )
    assert values.get("__interrupt__"), f"the run did not reach its gated action: {values}"
    assert (await client.threads.get(thread))["status"] == "interrupted"
    return thread


@pytest.mark.slow
async def test_state_of_a_paused_per_run_sop_shows_its_interrupt(served):
    srv, sop = served
    client = srv.client()  # with its bearer token (langgraph.json's auth)
    thread = await _pause(client, sop)

    state = await client.threads.get_state(thread)

    assert state["next"] == ["act_standby"]
    (task,) = state["tasks"]
    assert task["name"] == "act_standby"
    (pending,) = task["interrupts"]
    assert pending["value"]["node"] == "act_standby"
    assert pending["value"]["ask"] == "approve or reject"
    assert [i["value"]["node"] for i in state["interrupts"]] == ["act_standby"]
    assert [s["node"] for s in state["values"]["trail"]] == ["obs_idle"]
    assert state["values"]["verdicts"]["obs_idle"]["value"] == "true"


@pytest.mark.slow
@pytest.mark.parametrize("decision", ["approve", "reject"])
async def test_resume_through_the_sdk_takes_the_decided_edge(served, decision):
    srv, sop = served
    client = srv.client()  # with its bearer token (langgraph.json's auth)
    thread = await _pause(client, sop)

    # resumed as the pause was started: the default assistant, the SOP given per run
    values = await client.runs.wait(
        thread,
        "sop",
        command=await _bound(client, thread, decision),
        config={"configurable": {"sop": sop}},
    )

    state = await client.threads.get_state(thread)
    assert state["next"] == [] and not state["interrupts"] and not state["tasks"]
    assert (await client.threads.get(thread))["status"] == "idle"
    (step,) = [s for s in state["values"]["trail"] if s["node"] == "act_standby"]
    child = "act_notify_dock" if decision == "approve" else "act_page_engineer"
    assert step["fired"] == [child] and step["approval"] == "human"
    assert [s["node"] for s in state["values"]["trail"]] == ["obs_idle", "act_standby", child]
    (action,) = [a for a in values["actions"] if a["node"] == "act_standby"]
    assert action["status"] == ("executed" if decision == "approve" else "rejected")


@pytest.mark.slow
async def test_resume_without_repeating_the_sop(served):
    """A Studio user presses Continue: the resume names no SOP, the thread's own is used."""
    srv, sop = served
    client = srv.client()  # with its bearer token (langgraph.json's auth)
    thread = await _pause(client, sop)

    await client.runs.wait(thread, "sop", command=await _bound(client, thread, "approve"))

    state = await client.threads.get_state(thread)
    assert state["next"] == []
    nodes = [s["node"] for s in state["values"]["trail"]]
    assert nodes == ["obs_idle", "act_standby", "act_notify_dock"]


@pytest.mark.slow
async def test_a_plain_resume_without_the_gates_key_is_refused_and_asked_again(served):
    """``Command(resume="approve")`` names no gate: the run stays at its gate, the refusal
    recorded in the interrupt asked again; the bound answer then executes the action once."""
    srv, sop = served
    client = srv.client()  # with its bearer token (langgraph.json's auth)
    thread = await _pause(client, sop)
    (first,) = (await client.threads.get_state(thread))["interrupts"]

    await client.runs.wait(thread, "sop", command=Command(resume="approve"))

    state = await client.threads.get_state(thread)
    assert (await client.threads.get(thread))["status"] == "interrupted"
    assert state["next"] == ["act_standby"]
    (asked,) = state["interrupts"]
    assert asked["value"]["node"] == "act_standby" and asked["id"] != first["id"]
    assert asked["value"]["key"] == first["value"]["key"]
    (refused,) = asked["value"]["refused"]
    assert refused["answer"] == "approve" and "names no key" in refused["why"]
    assert [s["node"] for s in state["values"]["trail"]] == ["obs_idle"]

    values = await client.runs.wait(thread, "sop", command=await _bound(client, thread, "approve"))
    (action,) = [a for a in values["actions"] if a["node"] == "act_standby"]
    assert action["status"] == "executed" and len(action["refused_answers"]) == 1


OWN_GRAPHS = """
from pathlib import Path

from sopgraph.runtime.studio import build_graph

my_sop = build_graph(Path(__file__).parent / "my-sop")
"""


@pytest.mark.slow
async def test_own_sop_served_from_a_langgraph_json_of_ones_own(tmp_path):
    """docs/serving.md's recipe: a module beside one's langgraph.json builds one's SOP."""
    gated_sop(tmp_path).rename(tmp_path / "my-sop")
    (tmp_path / "my_graphs.py").write_text(OWN_GRAPHS)
    config = {"dependencies": ["."], "graphs": {"my_sop": "./my_graphs.py:my_sop"}}
    (tmp_path / "home").mkdir()
    with LangGraphDev(
        config, workdir=tmp_path, env={"SOPGRAPH_HOME": str(tmp_path / "home")}
    ) as srv:
        client = srv.client()
        thread = (await client.threads.create())["thread_id"]
        await client.runs.wait(thread, "my_sop", input={"input": INPUT})
        state = await client.threads.get_state(thread)
        assert state["next"] == ["act_standby"]
        assert state["tasks"][0]["interrupts"][0]["value"]["node"] == "act_standby"
        await client.runs.wait(thread, "my_sop", command=await _bound(client, thread, "reject"))
        state = await client.threads.get_state(thread)
        nodes = [s["node"] for s in state["values"]["trail"]]
        assert nodes == ["obs_idle", "act_standby", "act_page_engineer"]
