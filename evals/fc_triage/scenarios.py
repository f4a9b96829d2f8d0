"""Historical alarm scenarios with their ground truth, by walking the SOP with the labeler.

A scenario is one alarm plus what a faithful triage finds: the observations and root causes
that hold, and the actions reached. The walk follows the SOP file itself (every child of a
fired edge runs; a node outside a loop runs once), with every action approved.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sopgraph.evals.fc_triage.labeler import Labeler
from sopgraph.evals.fc_triage.plant import iso
from sopgraph.evals.fc_triage.truth import Query, Truth
from sopgraph.graphs.model import Node, Sop
from sopgraph.graphs.topology import walk as layer_walk

TIE_EPS = 1e-6


def walk(
    sop: Sop, labeler: Labeler, alarm: dict, params: dict[str, Any]
) -> tuple[list[str], dict[str, Truth], list[str]]:
    """The SOP walk of one alarm, layer by layer as a run takes it (loops to their
    ``max_visits``), every gated action approved: (path, verdicts by node, actions reached)."""
    q = Query(alarm["site"], alarm["ts"], alarm.get("station"))
    verdicts: dict[str, Truth] = {}
    actions: list[str] = []

    def step(node: Node) -> list[str]:
        if node.is_action:
            actions.append(node.id)
            return node.next.true + node.next.always
        t = labeler.label(node.id, q, params)
        verdicts[node.id] = t
        return getattr(node.next, t.value) + node.next.always

    path = layer_walk(sop, list(sop.entry[alarm["type"]]), step)
    return path, verdicts, actions


def has_tie(verdicts: dict[str, Truth]) -> bool:
    """A float statistic within rounding distance of its threshold: no honest single answer."""
    return any(t.margin is not None and t.margin < TIE_EPS for t in verdicts.values())


def scenario_record(sop: Sop, alarm: dict, path, verdicts, actions) -> dict:
    kinds = {nid: sop.nodes[nid].kind for nid in path}
    true_of = lambda kind: sorted(  # noqa: E731
        n for n, t in verdicts.items() if kinds[n] == kind and t.value == "true"
    )
    return {
        "alarm_id": alarm["alarm_id"],
        "type": alarm["type"],
        "site": alarm["site"],
        "station": alarm.get("station"),
        "timestamp": iso(alarm["ts"]),
        "observations": true_of("observation"),
        "root_causes": true_of("root_cause"),
        "constraints": true_of("constraint"),
        "actions": sorted(actions),
        "verdicts": {n: t.value for n, t in verdicts.items()},
        "path": path,
    }


def build_scenarios(
    sop: Sop,
    labeler: Labeler,
    alarms: list[dict],
    params_of: dict[str, dict[str, Any]],
    rng: np.random.Generator,
    count: int = 1500,
) -> list[dict]:
    """``count`` scenarios (fewer if the world is small), time-ordered, split 50/50 in time."""
    order = rng.permutation(len(alarms))
    chosen: list[dict] = []
    for i in order:
        alarm = alarms[int(i)]
        path, verdicts, actions = walk(sop, labeler, alarm, params_of[alarm["site"]])
        if has_tie(verdicts):
            continue
        chosen.append(scenario_record(sop, alarm, path, verdicts, actions) | {"_ts": alarm["ts"]})
        if len(chosen) == count:
            break
    chosen.sort(key=lambda s: (s["_ts"], s["alarm_id"]))
    half = len(chosen) // 2
    for i, s in enumerate(chosen):
        s["split"] = "train" if i < half else "eval"
        del s["_ts"]
    return chosen
