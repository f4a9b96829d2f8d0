"""The shape of an SOP graph: its edges, what reaches what, each node's parents, its loops, and
the layer-by-layer walk a run takes.

The compiler (which nodes may run twice), the validator (which loops need a bound or an exit),
the catalog, the simulator's labeler and the benchmark's floor all ask these questions;
answering them in one place keeps them agreeing on what a cycle is and when a node runs again.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field

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


def reachable(sop: Sop, starts: list[str]) -> list[str]:
    """Nodes of ``sop`` reachable from ``starts`` (themselves included), depth-first order."""
    return reach(graph_of(sop), [s for s in starts if s in sop.nodes])


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
    succs: dict[str, list[str]] = {}  # each node's successors, listed once: O(edges) in all
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
                succs[nid] = [e.target for e in graph[nid] if e.target in allowed]
            succ = succs[nid]
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


# -- the walk a run takes --------------------------------------------------------------------

# Loop membership by SOP object: finding it costs about 1 ms on a 64-node SOP, more than the
# rest of a walk, and benchmarks walk the same loaded (never mutated) SOP for every alarm.
_cyclic_cache: dict[int, tuple[weakref.ref[Sop], frozenset[str]]] = {}


def _cyclic_of(sop: Sop) -> frozenset[str]:
    key = id(sop)
    hit = _cyclic_cache.get(key)
    if hit is not None and hit[0]() is sop:
        return hit[1]
    cyclic = frozenset(nodes_in_cycles(sop))
    _cyclic_cache[key] = (weakref.ref(sop, lambda _: _cyclic_cache.pop(key, None)), cyclic)
    return cyclic


@dataclass
class LayerWalk:
    """The compiled graph's rules for which fired nodes run in the next superstep, without
    LangGraph: a node fired twice in one layer runs once; a node outside any loop runs once per
    walk (a second parent reaching it later does not decide it again); a node inside a loop runs
    again until its ``max_visits``.

    Drive it with :func:`walk` or :func:`awalk`, or by hand: ``layer`` is what runs next, and
    ``advance`` takes what each of those nodes fired.
    """

    sop: Sop
    starts: list[str]
    visits: dict[str, int] = field(default_factory=dict)
    path: list[str] = field(default_factory=list)
    layer: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._cyclic = _cyclic_of(self.sop)
        self.layer = self._admit(self.starts)

    def _admit(self, fired: Iterable[str]) -> list[str]:
        layer: list[str] = []
        for nid in dict.fromkeys(fired):
            seen, bound = self.visits.get(nid, 0), self.sop.nodes[nid].max_visits
            if (bound is not None and seen >= bound) or (seen and nid not in self._cyclic):
                continue
            layer.append(nid)
        for nid in layer:
            self.visits[nid] = self.visits.get(nid, 0) + 1
        self.path += layer
        return layer

    def advance(self, fired: Iterable[list[str]]) -> list[str]:
        """The next layer, from the children each node of the current layer fired (in order)."""
        self.layer = self._admit(child for children in fired for child in children)
        return self.layer


def walk(sop: Sop, starts: list[str], step: Callable[[Node], list[str]]) -> list[str]:
    """Walk ``sop`` from ``starts`` layer by layer; ``step(node)`` returns the children it
    fires. Returns the path: nodes in the order they ran (a loop's nodes once per visit).

    Example:
        >>> walk(sop, ["obs_a"], lambda node: node.next.true)
        ['obs_a', 'rc_b', 'act_c']
    """
    w = LayerWalk(sop, starts)
    while w.layer:
        w.advance([step(sop.nodes[nid]) for nid in w.layer])
    return w.path


async def awalk(
    sop: Sop, starts: list[str], step: Callable[[Node], Awaitable[list[str]]]
) -> list[str]:
    """:func:`walk` with an async ``step``; the nodes of a layer run concurrently."""
    w = LayerWalk(sop, starts)
    while w.layer:
        w.advance(await asyncio.gather(*(step(sop.nodes[nid]) for nid in w.layer)))
    return w.path
