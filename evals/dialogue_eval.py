"""Two measures of dialogue SOPs over their balanced cases (``evals.dialogue_cases``):

- violation injection (paper 002's method, at the action level): each compliant conversation
  gets one action dropped, two adjacent actions reordered, an action inserted that the SOP
  does not call for, or the customer's membership-dependent action swapped for another
  level's; ``sopgraph audit`` is scored per violation type (precision, recall);
- path evaluation (paper 001): each case run through the SOP with its executors; path
  accuracy (the actions in order), leaf accuracy (the last action), beside a baseline that
  always answers the most common path, and the SOP engineering loop's ranking of the nodes
  where runs leave their case's path.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sopgraph.evals.dialogue_cases import Case, PathSpec, abcd_truth, enumerate_paths, is_data
from sopgraph.graphs.model import Sop
from sopgraph.runtime.audit import VIOLATIONS, audit, is_membership_node
from sopgraph.runtime.dialogue import LEVELS, Conversation, Replayer, Turn

INJECTIONS = {"drop": "missing", "reorder": "out_of_order", "insert": "not_called_for",
              "swap": "membership"}  # fmt: skip
# ABCD's 30 action buttons (ontology.json): an inserted action is one the SOP never uses
ABCD_BUTTONS = (
    "pull-up-account", "enter-details", "verify-identity", "make-password", "search-timing",
    "search-policy", "validate-purchase", "search-faq", "membership", "search-boots",
    "try-again", "ask-the-oracle", "update-order", "promo-code", "update-account",
    "search-membership", "make-purchase", "offer-refund", "notify-team", "record-reason",
    "search-jeans", "shipping-status", "search-shirt", "instructions", "search-jacket",
    "log-out-in", "select-faq", "subscription-status", "send-link", "search-pricing",
)  # fmt: skip


@dataclass
class Injected:
    """A conversation with one injected violation, and the findings a correct audit reports."""

    injection: str  # drop | reorder | insert | swap | none (compliant)
    conversation: Conversation
    labels: list[dict[str, Any]] = field(default_factory=list)  # kind, steps, turn


def _renumber(turns: list[Turn]) -> list[Turn]:
    return [Turn(i, t.speaker, t.text, t.button) for i, t in enumerate(turns)]


def _with(conv: Conversation, cid: str, turns: list[Turn]) -> Conversation:
    old = {t.index: i for i, t in enumerate(turns)}  # labels move with their turns
    labels = {k: old.get(v, v) for k, v in (conv.conditions or {}).items()}
    return Conversation(cid, conv.scenario, _renumber(turns), labels, conv.entry)


def path_for(sop: Sop, specs: list[PathSpec], scenario: dict, labels: dict[str, int]) -> PathSpec:
    """The path the SOP takes on ``scenario`` with these conversation conditions (by truth)."""
    for spec in specs:
        ok = True
        for nid, outcome in spec.decisions:
            node = sop.nodes[nid]
            if is_data(node):
                ok = abcd_truth(node, scenario) == (outcome == "true")
            else:
                ok = (outcome in labels) if outcome not in ("true", "false") else \
                    ((node.text in labels) == (outcome == "true"))  # fmt: skip
            if not ok:
                break
        if ok and spec.entry == (scenario.get("entry") or spec.entry):
            return spec
    raise LookupError("no path")


def inject(sop: Sop, case: Case, rng: random.Random) -> list[Injected]:
    """The compliant conversation and each injection that applies to it."""
    conv, spec = case.conversation, case.path
    turns = conv.turns
    acts = [i for i, t in enumerate(turns) if t.button]
    out = [Injected("none", conv)]
    if not acts:
        return out
    node_of = dict(zip(acts, spec.actions, strict=True))
    i = rng.choice(acts)  # drop
    out.append(Injected("drop", _with(conv, conv.convo_id + "-drop", turns[:i] + turns[i + 1 :]),
                        [{"kind": "missing", "steps": [node_of[i]]}]))  # fmt: skip
    pairs = [
        (a, b) for a, b in zip(acts, acts[1:], strict=False) if turns[a].button != turns[b].button
    ]
    if pairs:  # reorder two neighbouring actions
        a, b = rng.choice(pairs)
        swapped = list(turns)
        swapped[a], swapped[b] = turns[b], turns[a]
        out.append(Injected("reorder", _with(conv, conv.convo_id + "-reorder", swapped),
                            [{"kind": "out_of_order", "steps": [node_of[a], node_of[b]]}]))  # fmt: skip
    used = {n.api.name for n in sop.nodes.values() if n.is_action and n.api}
    spare = [b for b in ABCD_BUTTONS if b not in used]
    at = rng.choice([*acts, len(turns)])
    button = rng.choice(spare)
    new = Turn(-1, "action", f"[{button}]", button)
    ins = _with(conv, conv.convo_id + "-insert", turns[:at] + [new] + turns[at:])
    out.append(Injected("insert", ins, [{"kind": "not_called_for", "turn": at}]))
    swap = _swap(sop, case, node_of, rng)
    if swap is not None:
        out.append(swap)
    return out


def _swap(sop: Sop, case: Case, node_of: dict[int, str], rng: random.Random) -> Injected | None:
    """Replace the customer's membership-dependent action with one another level gets."""
    conv, spec = case.conversation, case.path
    if not any(is_membership_node(sop.nodes[n]) for n, _ in spec.decisions):
        return None
    specs = enumerate_paths(sop)
    level = conv.scenario["personal"]["member_level"]
    mine = [sop.nodes[n].api.name for n in spec.actions]
    options = []
    for other in LEVELS:
        if other == level:
            continue
        sc = {**conv.scenario, "personal": {**conv.scenario["personal"], "member_level": other}}
        alt = path_for(sop, specs, sc, conv.conditions or {})
        extra = [n for n in alt.actions if sop.nodes[n].api.name not in mine]
        replace = [i for i, n in node_of.items() if n not in alt.actions]
        if extra and replace:
            options.append((replace[0], extra[0]))
    if not options:
        return None
    at, node = rng.choice(options)
    button = sop.nodes[node].api.name
    turns = list(conv.turns)
    turns[at] = Turn(at, "action", f"[{button}]", button)
    labels = [{"kind": "membership", "turn": at}]
    if mine.count(conv.turns[at].button) == 1:  # the replaced step is then missing too
        labels.append({"kind": "missing", "steps": [node_of[at]]})
    return Injected("swap", _with(conv, conv.convo_id + "-swap", turns), labels)


def _matches(finding: Any, label: dict[str, Any]) -> bool:
    if finding.kind != label["kind"]:
        return False
    if "turn" in label:
        return finding.turn == label["turn"]
    return finding.step in label["steps"]


async def score_audit(sop_path: str, sop: Sop, items: list[Injected]) -> list[dict[str, Any]]:
    """Audit each conversation; per conversation the findings matched and missed."""
    rows = []
    async with Replayer(sop_path, [it.conversation for it in items]) as r:
        for it in items:
            report = await audit(r, it.conversation)
            found = report.violations
            hit = [any(_matches(f, lb) for f in found) for lb in it.labels]
            false = [f for f in found if not any(_matches(f, lb) for lb in it.labels)]
            rows.append(
                {"sop": sop.id, "convo": it.conversation.convo_id, "injection": it.injection,
                 "labels": it.labels, "hit": hit,
                 "false": [{"kind": f.kind, "turn": f.turn, "step": f.step} for f in false],
                 "true_kinds": [lb["kind"] for lb, h in zip(it.labels, hit, strict=True) if h]}
            )  # fmt: skip
    return rows


def precision_recall(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per finding kind: TP, FP, FN, precision, recall; plus the compliant conversations clean."""
    table: dict[str, dict[str, Any]] = {}
    for kind in VIOLATIONS:
        tp = sum(r["true_kinds"].count(kind) for r in rows)
        fp = sum(1 for r in rows for f in r["false"] if f["kind"] == kind)
        labels = sum(1 for r in rows for lb in r["labels"] if lb["kind"] == kind)
        table[kind] = {
            "injection": next(k for k, v in INJECTIONS.items() if v == kind),
            "labels": labels, "tp": tp, "fp": fp, "fn": labels - tp,
            "precision": round(tp / (tp + fp), 3) if tp + fp else None,
            "recall": round(tp / labels, 3) if labels else None,
        }  # fmt: skip
    clean = [r for r in rows if r["injection"] == "none"]
    table["compliant"] = {"conversations": len(clean), "clean": sum(not r["false"] for r in clean)}
    return table


def diverging_node(expected: list[str], got: list[str]) -> str | None:
    """The node a failing run is charged to: the last node the case's path and the run share
    (the decision that left the path), or the path's first node when they share none; None
    when the run followed the whole path and no further."""
    for k, nid in enumerate(expected):
        if k >= len(got) or got[k] != nid:
            return expected[k - 1] if k else nid
    if len(got) > len(expected):  # went on past the path's end: its last decision was wrong
        return expected[-1] if expected else got[0]
    return None


async def eval_paths(sop_path: str, sop: Sop, cases: list[Case], judge: str = "labels") -> dict:
    """Run each case; path and leaf accuracy, the most-common-path baseline, failing nodes."""
    rows = []
    async with Replayer(sop_path, [c.conversation for c in cases], judge=judge) as r:
        for c in cases:
            steps, stopped = await r.expected(c.conversation)
            got = [s.node for s in steps if s.button]
            order = [s.node for s in steps]
            leaf = got[-1] if got else (order[-1] if order else None)
            diverge = diverging_node(c.path.order, order) if got != c.path.actions else None
            rows.append(
                {"case": c.case_id, "path_ok": got == c.path.actions, "leaf_ok": leaf == c.path.leaf,
                 "expected": c.path.actions, "got": got, "node": diverge, "stopped": stopped}
            )  # fmt: skip
    n = len(rows)
    paths = Counter(tuple(c.path.actions) for c in cases)
    leaves = Counter(c.path.leaf for c in cases)
    visits = Counter(nid for c in cases for nid in c.path.order if not sop.nodes[nid].is_action)
    fails = Counter(r["node"] for r in rows if r["node"])
    ranking = [
        {"node": nid, "failures": k, "visits": visits[nid],
         "rate": round(k / visits[nid], 3) if visits[nid] else None,
         "text": sop.nodes[nid].text}
        for nid, k in fails.most_common()
    ]  # fmt: skip
    return {
        "sop": sop.id, "judge": judge, "cases": n, "paths": len(paths), "leaves": len(leaves),
        "path_accuracy": round(sum(r["path_ok"] for r in rows) / n, 3) if n else None,
        "leaf_accuracy": round(sum(r["leaf_ok"] for r in rows) / n, 3) if n else None,
        "baseline_path_accuracy": round(paths.most_common(1)[0][1] / n, 3) if n else None,
        "baseline_leaf_accuracy": round(leaves.most_common(1)[0][1] / n, 3) if n else None,
        "failing_nodes": ranking, "failures": [r for r in rows if not r["path_ok"]],
    }  # fmt: skip
