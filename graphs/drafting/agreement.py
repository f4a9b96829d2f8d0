"""How far a drafted SOP agrees with a hand-written one: nodes matched by their words, edges
compared through the match (labels aside). Outcome nodes (``answer_*``, titled ``output:
value``) and the edges into them count only when the hand-written SOP has them.

Usage: ``python -m sopgraph.graphs.drafting.agreement DRAFTED HAND`` prints the figures as JSON.
"""

from __future__ import annotations

import json
import re
import sys

from sopgraph.graphs.drafting.checks import outcome_of
from sopgraph.graphs.loader import load_sop
from sopgraph.graphs.model import Node, Sop

MIN_OVERLAP = 0.3  # Jaccard over content words below which two nodes are not the same step
_STOP = {"the", "a", "an", "of", "if", "is", "to", "and", "or", "for", "any", "that", "it", "in",
         "their", "them", "customer", "customer's", "s", "be", "with", "there", "else"}  # fmt: skip


def _words(node: Node) -> set[str]:
    text = " ".join([node.title, node.text, node.api.description if node.api else ""])
    return {w for w in re.findall(r"[a-z]+", text.lower()) if w not in _STOP}


def match(drafted: Sop, hand: Sop) -> dict[str, str]:
    """Hand node id -> drafted node id, best overlap first, each used once."""
    pairs = []
    for h in hand.nodes.values():
        for d in drafted.nodes.values():
            a, b = _words(h), _words(d)
            if a and b and (score := len(a & b) / len(a | b)) >= MIN_OVERLAP:
                pairs.append((score, h.id, d.id))
    out: dict[str, str] = {}
    for _, h, d in sorted(pairs, reverse=True):
        if h not in out and d not in out.values():
            out[h] = d
    return out


def _edges(sop: Sop, keep: set[str]) -> set[tuple[str, str]]:
    return {
        (n.id, c)
        for n in sop.nodes.values()
        for _, c in n.next.edges()
        if c in keep and n.id in keep
    }


def agreement(drafted: Sop, hand: Sop) -> dict[str, float | int]:
    """Node and edge recall (of the hand-written graph) and precision (of the draft)."""
    hand_has_outcomes = any(outcome_of(n) for n in hand.nodes.values())
    kept = {n.id for n in drafted.nodes.values() if hand_has_outcomes or not outcome_of(n)}
    m = match(drafted.model_copy(update={"nodes": {k: drafted.nodes[k] for k in kept}}), hand)
    hand_edges = _edges(hand, set(hand.nodes))
    drafted_edges = _edges(drafted, kept)
    mapped = {(m[a], m[b]) for a, b in hand_edges if a in m and b in m}
    same = mapped & drafted_edges
    return {
        "hand_nodes": len(hand.nodes), "drafted_nodes": len(kept), "matched_nodes": len(m),
        "node_recall": round(len(m) / len(hand.nodes), 3),
        "node_precision": round(len(m) / len(kept), 3) if kept else 0.0,
        "hand_edges": len(hand_edges), "drafted_edges": len(drafted_edges),
        "matched_edges": len(same),
        "edge_recall": round(len(same) / len(hand_edges), 3) if hand_edges else 0.0,
        "edge_precision": round(len(same) / len(drafted_edges), 3) if drafted_edges else 0.0,
    }  # fmt: skip


if __name__ == "__main__":
    drafted_sop = load_sop(sys.argv[1], check=False)
    print(json.dumps(agreement(drafted_sop, load_sop(sys.argv[2])), indent=1))
