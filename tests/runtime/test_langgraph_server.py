"""The real LangGraph server (``langgraph dev``) serving ``langgraph.json``, driven by langgraph-sdk.

The alarm-triage graph triages an alarm of the test world up to a gated action, which pauses
the run as an interrupt the server reports; resumed with approve or reject, the run ends as
the SOP says (its gated actions have no children) with the ground truth's verdicts. A small
gated SOP on the generic ``sop`` graph checks that approve and reject take different edges.
The repository's langgraph.json declares its bearer-token auth: each client sends a token.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fc_world import fc_home, fc_world  # noqa: F401
from gated_sop import INPUT, gated_sop
from langgraph_sdk.schema import Command

from sopgraph.evals.fc_triage.dataset import Scenario, load_scenarios
from sopgraph.evals.langgraph_dev import CONFIG, REPO, LangGraphDev
from sopgraph.graphs.loader import load_sop
from sopgraph.runtime.studio import resolve_sop

pytestmark = pytest.mark.slow


@dataclass
class Target:
    """Which graph to run: a graph id of ``langgraph.json``, its SOP, an input reaching a gate."""

    graph: str
    sop: str
    input: dict[str, Any]


def gated_target(root: Path) -> Target:
    return Target("sop", str(gated_sop(root, "studio_gated")), INPUT)


@pytest.fixture(scope="module")
def server(tmp_path_factory, fc_home):  # noqa: F811
    work = tmp_path_factory.mktemp("langgraph")
    in_repo = (REPO / ".langgraph_api").exists()
    # The repository's own langgraph.json, the server started in a scratch folder.
    with LangGraphDev(CONFIG, workdir=work, env={"SOPGRAPH_HOME": str(fc_home)}) as srv:
        yield srv, work
    # the server keeps its state where it runs, never in the repository
    assert (REPO / ".langgraph_api").exists() == in_repo
    assert (work / ".langgraph_api").is_dir()


@pytest.fixture(scope="module")
def target(server) -> Target:
    return gated_target(server[1])


@pytest.fixture(scope="module")
def alarm(fc_world) -> Scenario:  # noqa: F811
    """An alarm whose faithful triage reaches exactly one gated action."""
    sop = load_sop(resolve_sop("fc_alarm_triage"))
    gated = {i for i, n in sop.nodes.items() if n.approval == "required"}
    return next(s for s in load_scenarios(fc_world.scenarios) if len(gated & set(s.actions)) == 1)


def _nodes(state: dict[str, Any]) -> list[str]:
    return [s["node"] for s in state.get("trail") or []]


async def _start(client, target: Target) -> tuple[str, str, str]:
    """Run ``target`` on a new thread up to its first gated action; return the ids and the node."""
    assistant = await client.assistants.create(
        graph_id=target.graph, config={"configurable": {"sop": target.sop}}
    )
    thread = await client.threads.create()
    values = await client.runs.wait(
        thread["thread_id"], assistant["assistant_id"], input={"input": target.input}
    )
    assert values.get("__interrupt__"), f"the run did not reach a gated action: {values}"
    state = await client.threads.get_state(thread["thread_id"])
    (pending,) = state["interrupts"]
    gated = pending["value"]["node"]
    assert state["next"] == [gated]
    assert pending["value"]["ask"] == "approve or reject"
    assert gated not in _nodes(state["values"]), "a paused action is not in the trail yet"
    return assistant["assistant_id"], thread["thread_id"], gated


def _decisions(sop, verdicts: dict[str, Any]) -> dict[str, str]:
    return {n: v["value"] for n, v in verdicts.items() if sop.nodes[n].kind != "action"}


@pytest.mark.parametrize("decision", ["approve", "reject"])
async def test_triage_alarm_pauses_on_its_gated_action_and_resumes(server, alarm, decision):
    srv, _ = server
    client = srv.client()
    sop = load_sop(resolve_sop("fc_alarm_triage"))
    thread = (await client.threads.create())["thread_id"]

    values = await client.runs.wait(thread, "fc_alarm_triage", input={"input": alarm.input})
    assert values.get("__interrupt__"), f"{alarm.alarm_id} did not pause: {values}"
    state = await client.threads.get_state(thread)
    (pending,) = state["interrupts"]
    gated = pending["value"]["node"]
    assert gated in alarm.actions and sop.nodes[gated].approval == "required"
    assert state["next"] == [gated] and pending["value"]["cost"] == sop.nodes[gated].cost
    assert gated not in _nodes(state["values"]), "a paused action is not in the trail yet"
    # What the triage found so far agrees with the ground truth.
    found = _decisions(sop, state["values"]["verdicts"])
    assert found and found.items() <= alarm.verdicts.items()

    answer = {"decision": decision, "key": pending["value"]["key"]}  # bound to the gate shown
    values = await client.runs.wait(thread, "fc_alarm_triage", command=Command(resume=answer))

    state = await client.threads.get_state(thread)
    assert state["next"] == [] and not state["interrupts"], "the run is over"
    (step,) = [s for s in state["values"]["trail"] if s["node"] == gated]
    edge = sop.nodes[gated].next.true if decision == "approve" else sop.nodes[gated].next.false
    assert step["fired"] == list(edge) and step["approval"] == "human"
    # The SOP's gated actions have no children, so approve and reject both end the branch
    # there: the run visits exactly the nodes of the ground truth (labeled approving all).
    assert not sop.nodes[gated].next.children()
    assert sorted(_nodes(state["values"])) == sorted(alarm.path)
    assert _decisions(sop, state["values"]["verdicts"]) == alarm.verdicts
    assert {a["node"] for a in values["actions"]} == set(alarm.actions)
    (action,) = [a for a in values["actions"] if a["node"] == gated]
    assert action["approved"] is (decision == "approve")
    assert action["status"] == ("executed" if decision == "approve" else "rejected")


async def test_graphs_of_langgraph_json_are_served(server):
    srv, _ = server
    client = srv.client()
    served = {a["graph_id"] for a in await client.assistants.search(limit=100)}
    assert served >= set(json.loads((REPO / "langgraph.json").read_text())["graphs"])
    for graph in ("service_interruption", "fc_alarm_triage"):
        drawing = await client.assistants.get_graph(graph)
        ids = {n["id"] for n in drawing["nodes"]}
        assert set(load_sop(resolve_sop(graph)).nodes) <= ids, graph


@pytest.mark.parametrize("decision", ["approve", "reject"])
async def test_gated_action_takes_its_true_or_false_edge(server, target, decision):
    srv, _ = server
    client = srv.client()
    sop = load_sop(resolve_sop(target.sop))
    assistant, thread, gated = await _start(client, target)
    paused = await client.threads.get_state(thread)
    before = _nodes(paused["values"])
    (pending,) = paused["interrupts"]
    answer = {"decision": decision, "key": pending["value"]["key"]}  # bound to the gate shown

    values = await client.runs.wait(thread, assistant, command=Command(resume=answer))

    state = await client.threads.get_state(thread)
    path = _nodes(state["values"])
    assert path[: len(before)] == before and path[len(before)] == gated
    (step,) = [s for s in state["values"]["trail"] if s["node"] == gated]
    edge = sop.nodes[gated].next.true if decision == "approve" else sop.nodes[gated].next.false
    assert step["fired"] == list(edge) and step["approval"] == "human"
    # the children of the chosen edge ran (or, gated themselves, wait for a decision)
    waiting = {i["value"]["node"] for i in state["interrupts"]}
    assert set(edge) <= set(path[len(before) + 1 :]) | waiting
    other = sop.nodes[gated].next.false if decision == "approve" else sop.nodes[gated].next.true
    assert not set(other) & (set(path) - set(edge))
    (action,) = [a for a in values["actions"] if a["node"] == gated]
    assert action["approved"] is (decision == "approve")
    assert action["status"] == ("executed" if decision == "approve" else "rejected")
