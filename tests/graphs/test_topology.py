"""SOP graph topology: the cycle finder, loop membership and parents agree with brute force."""

from __future__ import annotations

import random

from sopgraph.graphs.model import Sop
from sopgraph.graphs.topology import Edge, cycles, graph_of, nodes_in_cycles, parents_of


def _reachable(graph: dict[str, list[Edge]], start: str, allowed: set[str]) -> set[str]:
    """Nodes reachable from ``start`` in one or more steps."""
    seen: set[str] = set()
    stack = [start]
    while stack:
        for e in graph[stack.pop()]:
            if e.target in allowed and e.target not in seen:
                seen.add(e.target)
                stack.append(e.target)
    return seen


def test_cycle_finder_matches_brute_force_on_random_graphs():
    rng = random.Random(7)
    for _ in range(500):
        ids = [f"n{i}" for i in range(rng.randint(1, 8))]
        graph = {
            n: [Edge(n, rng.choice(ids), "x", ()) for _ in range(rng.randint(0, 3))] for n in ids
        }
        nodes = rng.sample(ids, rng.randint(1, len(ids)))
        reach = {n: _reachable(graph, n, set(nodes)) for n in nodes}
        expected = {
            frozenset(m for m in nodes if m in reach[n] and n in reach[m])
            for n in nodes
            if n in reach[n]
        }
        assert {frozenset(c) for c in cycles(graph, nodes)} == expected


def _random_sop(rng: random.Random) -> Sop:
    ids = [f"n{i}" for i in range(rng.randint(1, 7))]
    keys = ["true", "false", "no_data", "always", "on_error"]
    nodes = {}
    for n in ids:
        nxt: dict = {
            k: rng.sample(ids, rng.randint(0, min(2, len(ids)))) for k in rng.sample(keys, 2)
        }
        nxt["when"] = [{"if": "it rains", "then": [rng.choice(ids)]}] if rng.random() < 0.3 else []
        nodes[n] = {"kind": "observation", "text": n, "next": nxt}
    return Sop.model_validate({"id": "s", "title": "s", "entry": {"a": [ids[0]]}, "nodes": nodes})


def test_loop_members_and_parents_match_brute_force_on_random_sops():
    rng = random.Random(11)
    for _ in range(300):
        sop = _random_sop(rng)
        graph = graph_of(sop)
        allowed = set(sop.nodes)
        assert nodes_in_cycles(sop) == {n for n in sop.nodes if n in _reachable(graph, n, allowed)}
        expected = {
            child: [n for n, node in sop.nodes.items() if child in node.next.children()]
            for child in sop.nodes
        }
        assert parents_of(sop) == expected


# -- the walk agrees with the compiled graph -------------------------------------------------

_TRUE = "return Verdict(value=True)"
WALKS = {
    # a loop bounded on one node, re-entered by a second parent from outside the loop, plus a
    # node fired twice in one layer and a node reached again later outside any loop
    "id": "walks",
    "entry": {"a": ["start"]},
    "nodes": {
        "start": {"kind": "observation", "text": "s", "next": {"true": ["retry", "side", "d1", "d2"]}},
        "retry": {"kind": "observation", "text": "r", "max_visits": 3,
                  "next": {"true": ["check"], "false": ["act_done"]}},
        "check": {"kind": "observation", "text": "c", "next": {"true": ["retry"], "false": ["act_done"]}},
        "side": {"kind": "observation", "text": "x", "next": {"true": ["late"]}},
        "late": {"kind": "observation", "text": "l", "next": {"true": ["check", "join"]}},
        "d1": {"kind": "root_cause", "text": "1", "next": {"true": ["join"]}},
        "d2": {"kind": "root_cause", "text": "2", "next": {"true": ["join"]}},
        "join": {"kind": "action", "text": "j"},
        "act_done": {"kind": "action", "text": "done"},
    },
}  # fmt: skip


async def test_walk_runs_nodes_as_often_as_the_compiled_graph(tmp_path, monkeypatch):
    from collections import Counter

    from sop_factory import make_sop

    from sopgraph.graphs.loader import load_sop
    from sopgraph.graphs.model import Verdict
    from sopgraph.graphs.routing import fired_children
    from sopgraph.graphs.topology import awalk, walk
    from sopgraph.runtime.runner import Session

    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    decisions = [n for n, v in WALKS["nodes"].items() if v["kind"] != "action"]
    root = make_sop(tmp_path / "sop", WALKS, {n: _TRUE for n in decisions})
    async with Session(root, mcp=False) as s:
        result = await s.run({"type": "a"})
    sop = load_sop(root)

    def step(node):
        if node.is_action:
            return node.next.true + node.next.always
        return fired_children(node, Verdict(value="true"))[0]

    async def astep(node):
        return step(node)

    path = walk(sop, ["start"], step)
    assert Counter(path) == Counter(result.path)
    assert path.count("retry") == 3 and path.count("join") == 1  # the bound; run once
    # in the loop and unbounded itself: each of its two parents' firings runs it again
    assert path.count("check") == 4
    assert await awalk(sop, ["start"], astep) == path


def test_reachable_skips_unknown_starts_and_follows_every_edge_kind():
    from sopgraph.graphs.topology import reachable

    sop = _random_sop(random.Random(3))
    everything = reachable(sop, list(sop.nodes) + ["nope"])
    assert sorted(everything) == sorted(sop.nodes)
    graph = graph_of(sop)
    start = next(iter(sop.nodes))
    assert set(reachable(sop, [start])) == {start} | _reachable(graph, start, set(sop.nodes))
