"""The shape of an SOP graph: its edges, what reaches what, each node's parents, and its loops.

The compiler (which nodes may run twice) and the validator (which loops need a bound or an
exit) both ask these questions; answering them in one place keeps them agreeing on what a
cycle is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from sopgraph.graphs.model import EDGE_KEYS, Node, Sop


@dataclass(frozen=True)
class Edge:
    """One ``source -> target`` reference in ``next``, with where it is written."""

    source: str
    target: str
    where: str  # "next.true", "next.when[0]"
    path: tuple[str | int, ...]  # the key path under the node, for LineMap.node


# Edges by source node, one entry per node of the SOP.
Graph = dict[str, list[Edge]]


def edges_of(node: Node) -> Iterator[Edge]:
    """Every child reference of ``node`` in file order, with its key path."""
    for key in EDGE_KEYS:
        for i, child in enumerate(getattr(node.next, key)):
            yield Edge(node.id, child, f"next.{key}", ("next", key, i))
    for j, cond in enumerate(node.next.when):
        for i, child in enumerate(cond.then):
            yield Edge(node.id, child, f"next.when[{j}]", ("next", "when", j, "then", i))


def graph_of(sop: Sop, resolve: Callable[[str], str | None] | None = None) -> Graph:
    """Edges of ``sop`` by source. Each target goes through ``resolve`` (a typo fixer, say);
    targets that resolve to no node are dropped, as are unknown ids when there is no resolver.

    Example:
        >>> graph_of(sop)["obs_x"][0].target
        'rc_y'
    """
    graph: Graph = {}
    for node in sop.nodes.values():
        out: list[Edge] = []
        for e in edges_of(node):
            target = resolve(e.target) if resolve else e.target
            if target in sop.nodes:
                out.append(Edge(e.source, target, e.where, e.path))
        graph[node.id] = out
    return graph


def reach(graph: Graph, starts: list[str]) -> list[str]:
    """Nodes reachable from ``starts`` (themselves included), in depth-first discovery order."""
    order: dict[str, None] = {}
    stack = list(reversed(starts))
    while stack:
        nid = stack.pop()
        if nid in order:
            continue
        order[nid] = None
        stack += [e.target for e in reversed(graph[nid]) if e.target not in order]
    return list(order)


def parents_of(sop: Sop) -> dict[str, list[str]]:
    """The distinct nodes whose ``next`` names each node, in file order."""
    out: dict[str, list[str]] = {nid: [] for nid in sop.nodes}
    for nid, edges in graph_of(sop).items():
        for e in edges:
            if nid not in out[e.target]:
                out[e.target].append(nid)
    return out


def nodes_in_cycles(sop: Sop) -> set[str]:
    """Nodes that can reach themselves (they may legitimately run more than once)."""
    return {n for loop in cycles(graph_of(sop), list(sop.nodes)) for n in loop}


def cycles(graph: Graph, nodes: list[str]) -> list[set[str]]:
    """Strongly connected components of ``graph`` restricted to ``nodes`` that hold a cycle,
    ordered by their first node in ``nodes`` (Tarjan's algorithm, iterative)."""
    allowed = set(nodes)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[set[str]] = []
    for root in nodes:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            nid, i = work.pop()
            if i == 0:
                index[nid] = low[nid] = len(index)
                stack.append(nid)
                on_stack.add(nid)
            succ = [e.target for e in graph[nid] if e.target in allowed]
            if i < len(succ):
                work.append((nid, i + 1))
                nxt = succ[i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[nid] = min(low[nid], index[nxt])
                continue
            if low[nid] == index[nid]:
                comp: set[str] = set()
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.add(top)
                    if top == nid:
                        break
                if len(comp) > 1 or nid in succ:
                    found.append(comp)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[nid])
    first = {n: i for i, n in enumerate(nodes)}
    return sorted(found, key=lambda c: min(first[n] for n in c))


def shortest_cycle(graph: Graph, loop: set[str], head: str) -> tuple[Edge, list[str]]:
    """The edge back into ``head`` closing the shortest cycle through it, and that cycle."""
    prev: dict[str, Edge | None] = {head: None}
    queue = [head]
    for nid in queue:
        for e in graph[nid]:
            if e.target == head:
                path = [nid]
                while (p := prev[path[0]]) is not None:
                    path.insert(0, p.source)
                return e, path
            if e.target in loop and e.target not in prev:
                prev[e.target] = e
                queue.append(e.target)
    raise AssertionError(f"{head} is in a cycle but no edge leads back to it")
