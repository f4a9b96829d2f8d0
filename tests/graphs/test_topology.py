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
