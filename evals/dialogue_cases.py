"""Balanced test cases for a dialogue SOP (SOP-Agent's method, paper 001 appendix D): every path
from an entry to a leaf, each realised by a scenario (data outcomes) and simulated customer
turns (the conversation conditions that hold), and written as a compliant ABCD conversation.

Data outcomes are realised from a grid of scenario variants judged by ``abcd_truth``, a rule
reading of the condition's text (membership level in a set, original packaging, the Oracle,
purchase within N days or months) that shares no code with the compiled tools it checks.
"""

from __future__ import annotations

import itertools
import random
import re
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from sopgraph.graphs.model import Node, Sop
from sopgraph.runtime.dialogue import LEVELS, Conversation, Turn

TODAY = date(2020, 1, 15)
AGES = (3, 20, 60, 120, 400)  # days since purchase, away from the 7/30/90/182-day limits


def abcd_truth(node: Node, scenario: dict[str, Any]) -> bool | None:
    """Whether an ABCD data condition holds on ``scenario`` (None: not a condition it reads)."""
    text = node.text.lower()
    if m := re.search(r"membership level is ([a-z ]+)", text):
        levels = {w for w in m.group(1).split() if w in LEVELS}
        return scenario["personal"]["member_level"] in levels
    if "original packaging" in text:
        return scenario["order"]["packaging"] == "yes"
    if "oracle" in text:
        return scenario.get("oracle") == "yes"
    if m := re.search(r"within the last (\d+) (days|months)", text):
        limit = int(m.group(1)) * (30.5 if m.group(2) == "months" else 1)
        bought = date.fromisoformat(scenario["order"]["purchase_date"])
        return (date.fromisoformat(scenario["today"]) - bought).days <= limit
    return None


def scenario_grid() -> list[dict[str, Any]]:
    """Scenario variants over level x packaging x Oracle x purchase age (80)."""
    out = []
    for level, pack, oracle, age in itertools.product(LEVELS, ("yes", "no"), ("yes", "no"), AGES):
        bought = (TODAY - timedelta(days=age)).isoformat()
        out.append(
            {"personal": {"customer_name": "test customer", "member_level": level,
                          "username": "tcustomer1"},
             "order": {"order_id": "2000000000", "purchase_date": bought, "packaging": pack},
             "oracle": oracle, "today": TODAY.isoformat()}
        )  # fmt: skip
    return out


@dataclass
class PathSpec:
    """One way through the SOP: the outcome of each decision, the actions, the leaf."""

    entry: str
    decisions: list[tuple[str, str]]  # (node, "true" | "false" | a `when` condition's text)
    actions: list[str]  # action node ids in order
    order: list[str] = field(default_factory=list)  # every node in order

    @property
    def leaf(self) -> str:
        return self.actions[-1] if self.actions else self.order[-1]


def is_data(node: Node) -> bool:
    return not node.is_action and bool(node.data)


def enumerate_paths(sop: Sop, limit: int = 500) -> list[PathSpec]:
    """Every path from each entry to an end, a decision at a time (each node once a path)."""
    out: list[PathSpec] = []

    def walk(entry: str, todo: list[str], spec: PathSpec) -> None:
        while todo and len(out) < limit:
            nid = todo.pop(0)
            if nid in spec.order:
                continue
            node = sop.nodes[nid]
            spec.order.append(nid)
            nxt = node.next
            if node.is_action:
                spec.actions.append(nid)
                todo = [*todo, *nxt.children()]
                continue
            branches: list[tuple[str, list[str]]] = []
            if nxt.when:
                branches = [(str(c.if_), list(c.then)) for c in nxt.when]
            elif nxt.true or nxt.false:
                branches = [("true", nxt.true), ("false", nxt.false)]
            if not branches:
                todo = [*todo, *nxt.always]
                continue
            for outcome, children in branches:
                copy = PathSpec(entry, [*spec.decisions, (nid, outcome)], list(spec.actions),
                                list(spec.order))  # fmt: skip
                walk(entry, [*todo, *nxt.always, *children], copy)
            return
        out.append(spec)

    for entry, nodes in sop.entry.items():
        walk(entry, list(nodes), PathSpec(entry, [], []))
    return out


def realise(sop: Sop, spec: PathSpec, grid: list[dict[str, Any]]) -> list[int]:
    """Indices of the grid's scenarios on which the path's data outcomes hold."""
    wanted = [(sop.nodes[n], o == "true") for n, o in spec.decisions if is_data(sop.nodes[n])]
    return [i for i, s in enumerate(grid) if all(abcd_truth(n, s) == v for n, v in wanted)]


@dataclass
class Case:
    """A balanced test case: its path, scenario and simulated conversation."""

    case_id: str
    path: PathSpec
    conversation: Conversation


def conversation_for(sop: Sop, spec: PathSpec, case_id: str, scenario: dict) -> Conversation:
    """A compliant conversation along ``spec``: the customer states each conversation condition
    that holds just before the SOP needs it; the agent clicks each action's button."""
    turns: list[Turn] = [Turn(0, "customer", "hi, i need some help")]
    labels: dict[str, int] = {}
    outcome = dict(spec.decisions)
    for nid in spec.order:
        node = sop.nodes[nid]
        if node.is_action:
            button = node.api.name if node.api else node.id
            turns.append(Turn(len(turns), "agent", node.text))
            turns.append(Turn(len(turns), "action", f"[{button}]", button))
            continue
        if node.data:  # decided by the scenario
            continue
        said = outcome.get(nid, "true")  # an observation with only `always` edges: it holds
        if said == "false":
            continue
        if said != "true":  # a `when` condition: the node's own check holds too
            labels[node.text] = len(turns)
        text = node.text if said == "true" else said
        labels[text] = len(turns)
        turns.append(Turn(len(turns), "customer", text))
    sc = {**scenario, "flow": sop.id, "subflow": sop.id.removeprefix("abcd_")}
    entry = spec.entry if len(sop.entry) > 1 else None
    return Conversation(case_id, sc, turns, labels, entry)


def balanced_cases(sop: Sop, per_path: int = 2, seed: int = 0) -> tuple[list[Case], list[str]]:
    """``per_path`` cases for every feasible path (each leaf's paths reached equally often),
    and the paths no scenario of the grid realises (as text)."""
    rng = random.Random(seed)
    grid = scenario_grid()
    cases, infeasible = [], []
    for k, spec in enumerate(enumerate_paths(sop)):
        fits = realise(sop, spec, grid)
        if not fits:
            infeasible.append(" > ".join(f"{n}={o}" for n, o in spec.decisions))
            continue
        for r in range(per_path):
            cid = f"{sop.id}-p{k}-{r}"
            scenario = grid[rng.choice(fits)] if any(is_data(sop.nodes[n]) for n in spec.order) \
                else grid[0]  # fmt: skip
            cases.append(Case(cid, spec, conversation_for(sop, spec, cid, scenario)))
    return cases, infeasible
