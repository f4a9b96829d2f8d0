"""Node and edge agreement of a drafted SOP with the hand-written one."""

from __future__ import annotations

from pathlib import Path

from sopgraph.graphs.drafting.agreement import agreement
from sopgraph.graphs.loader import load_sop

HAND = Path(__file__).parents[2] / "examples" / "service_interruption"


def test_the_hand_written_sop_agrees_with_itself_in_full():
    hand = load_sop(HAND)
    got = agreement(hand, hand)
    assert got["node_recall"] == got["edge_recall"] == got["edge_precision"] == 1.0


def test_a_lost_edge_and_a_renamed_node_count_against_the_draft():
    hand = load_sop(HAND)
    nodes = {k: v.model_copy(deep=True) for k, v in hand.nodes.items()}
    nodes["query_problem_resolution_status"].next.when.pop()  # the 'persists' branch is lost
    renamed = nodes.pop("check_area_outages")  # a drafted id differs; its words match it
    nodes["s8_check_outages"] = renamed.model_copy(update={"id": "s8_check_outages"})
    for n in nodes.values():
        for cond in n.next.when:
            cond.then = ["s8_check_outages" if t == "check_area_outages" else t for t in cond.then]
    drafted = hand.model_copy(update={"nodes": nodes})
    got = agreement(drafted, hand)
    assert got["matched_nodes"] == len(hand.nodes)
    assert got["matched_edges"] == got["hand_edges"] - 1
