"""ABCD's guidelines drafted into SOPs and compared with the hand-written ones (issue 51).

For each of the 14 intents in ``examples/abcd/``, the intent's guideline text
(``examples/abcd/data/guidelines.json``: its instructions, then its numbered actions with their
sub-points, as the ABCD agent guidelines print them) is written as a Markdown document, and
``sopgraph draft`` drafts it (``--samples``/``--repairs`` as given; ``--samples 0`` is the
structural candidate alone, no model). Each draft is then compared with the intent's
hand-written SOP:

- **nodes and edges** (``graphs/drafting/agreement``: nodes matched by their words);
- **paths** (SOP-Agent's path cases: every path of the hand-written SOP, as ``sopgraph eval
  paths`` enumerates them). The draft is walked from its entry with each decision answered by
  the outcome the case gives the hand-written decision it matches (an oracle: no judge, no
  tool, so this is the most a draft's structure allows). A decision the case does not answer
  ends the walk. The walk's button clicks (an action's ``[Button]`` in its text) must equal the
  case's, in order. The hand-written SOP walked the same way agrees on every path.
- **citations**: the draft's nodes whose ``source`` cites a sentence of the document.

Usage: ``python -m sopgraph.evals.abcd_drafts --out DIR [--samples N] [--repairs N] [--json]``
(``SOPGRAPH_MODEL`` and the cassette variables pass through to ``sopgraph draft``).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from sopgraph.evals.dialogue_cases import enumerate_paths
from sopgraph.examples import EXAMPLES
from sopgraph.graphs.drafting.agreement import agreement
from sopgraph.graphs.loader import load_sop
from sopgraph.graphs.model import Node, Sop

ABCD = EXAMPLES / "abcd"
GUIDELINES = ABCD / "data" / "guidelines.json"
ONTOLOGY = ABCD / "data" / "ontology.json"
TF = ("true", "false")
MAX_STEPS = 200  # a walk longer than this is a loop the draft does not bound
MAX_FREE = 4  # unanswered decisions a walk tries every answer of (2**4 walks at most)


@functools.cache
def intents() -> dict[str, tuple[str, str]]:
    """Intent folder -> (flow, subflow), read from each hand-written SOP's title."""
    out = {}
    for sop_yaml in sorted(ABCD.glob("*/sop.yaml")):
        title = load_sop(sop_yaml, check=False).title.split(": ", 1)[1]
        flow, sub = title.split(" > ")
        out[sop_yaml.parent.name] = (flow, sub)
    return out


def document(flow: str, sub: str) -> str:
    """The subflow's guideline text as Markdown: instructions, then the numbered actions."""
    entry = _data(GUIDELINES)[flow]["subflows"][sub]
    lines = [f"# {flow}: {sub}", ""]
    for text in entry["instructions"]:
        lines += [" ".join(text.split()), ""]
    lines += ["## Procedure", ""]
    for i, action in enumerate(entry["actions"], 1):
        lines.append(f"{i}. {' '.join(action['text'].split())}")
        lines += [f"   - {' '.join(s.split())}" for s in action["subtext"]]
    return "\n".join(lines) + "\n"


@functools.cache
def _data(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _actions() -> set[str]:
    onto = _data(ONTOLOGY)["actions"]
    return {a for group in onto.values() for a in group} | {"end-conversation"}


def clicks(node: Node, actions: set[str]) -> list[str]:
    """The action a node calls (its ``api``), else those its text names as ``[Button]``: the
    button's own name where ABCD's ontology has it, else the ontology action whose words it
    holds (``[Membership Privileges]`` is ``membership``)."""
    if node.api:
        return [node.api.name]
    out = []
    for button in re.findall(r"\[([A-Z][A-Za-z ]*)\]", node.text):  # not a list: ['a', 'b']
        words = button.lower().split()
        name = "-".join(words)
        if name not in actions:
            held = [a for a in sorted(actions) if set(a.split("-")) <= set(words)]
            name = held[0] if held else name
        out.append(name)
    return out


def walk(sop: Sop, answer: dict[str, str], click: Any, free: int = MAX_FREE) -> list[str] | None:
    """The clicks of a run through ``sop`` whose decisions take ``answer``'s outcomes (node ->
    "true"/"false"/a condition's text); None where a loop runs past ``MAX_STEPS``, or where a
    decision has no answer and its answers do not all give the same clicks (one whose every
    answer clicks alike needs none; at most ``free`` such decisions on a walk)."""
    out: list[str] = []
    todo = [n for nodes in sop.entry.values() for n in nodes]
    seen: set[str] = set()
    steps = 0
    while todo:
        nid = todo.pop(0)
        if nid in seen:
            continue
        seen.add(nid)
        steps += 1
        if steps > MAX_STEPS:
            return None
        node, nxt = sop.nodes[nid], sop.nodes[nid].next
        if node.is_action:
            out += click(node)
            todo += nxt.children()
            continue
        branches = {c.if_ if isinstance(c.if_, str) else "": c.then for c in nxt.when}
        branches |= {"true": nxt.true, "false": nxt.false} if (nxt.true or nxt.false) else {}
        if branches:
            if nid not in answer or answer[nid] not in branches:
                if free <= 0:
                    return None
                runs = [walk(sop, {**answer, nid: b}, click, free - 1) for b in branches]
                return runs[0] if runs[0] is not None and runs.count(runs[0]) == len(runs) else None
            out += click(node)  # a decision that names a button presses it to find out
            todo += [*nxt.always, *branches[answer[nid]]]
        else:
            todo += nxt.always
    return out


def _said(source: str) -> str:
    """The sentence a ``source`` quotes, lowercased, spaces collapsed: after a draft's
    ``(sN)`` or a hand-written ABCD node's ``> A2.s1:``."""
    text = re.split(r"\(s\d+\)|> [AI]\d+(?:\.s\d+)?:", source, maxsplit=1)[-1]
    return " ".join(text.lower().split())


def cited_match(drafted: Sop, hand: Sop) -> dict[str, list[str]]:
    """Drafted node -> the hand-written nodes that quote the sentence it cites (one holds the
    other: the document splits a guideline item into sentences); of those, the one with the
    node's own text where there is one. A drafted entry observation that quotes what no
    hand-written node does is matched to the hand-written entry (both observe whether the
    procedure applies; return_*'s cites its step A3 "Communication", not the opening line)."""
    quoted = {h.id: _said(h.source or "") for h in hand.nodes.values() if h.source}
    entries = {n for nodes in drafted.entry.values() for n in nodes}
    out: dict[str, list[str]] = {}
    for d in drafted.nodes.values():
        mine = _said(d.source or "")
        if mine:
            found = [h for h, q in quoted.items() if q and (mine in q or q in mine)]
            same = [h for h in found if hand.nodes[h].text == d.text]  # the same step
            out[d.id] = same or found
        if not out.get(d.id) and d.id in entries and not d.is_action:
            # an entry observation no hand-written node quotes: both state when the
            # procedure applies, so it is the hand-written entry observation
            out[d.id] = [h for nodes in hand.entry.values() for h in nodes]
    return out


def oracle(drafted: Sop, inv: dict[str, list[str]], outcome: dict[str, str]) -> dict[str, str]:
    """Each drafted decision's answer on a case: the outcome the case gives a hand-written
    decision citing the same sentence (several: true when all are); else, as a draft states a branch (the condition
    sentence is the branch's first node), that of the one its ``true`` branch's first node
    cites (its ``false`` branch's: the other outcome)."""
    out: dict[str, str] = {}

    def told(nid: str) -> bool | None:  # several citing it: all must hold (a conjunction)
        said = [outcome[h] == "true" for h in inv.get(nid, []) if outcome.get(h) in TF]
        return all(said) if said else None

    for d in drafted.nodes.values():
        if d.is_action:
            continue
        if (own := told(d.id)) is not None:
            out[d.id] = str(own).lower()
            continue
        for branch, other in (("true", False), ("false", True)):
            said = [x for c in getattr(d.next, branch) if (x := told(c)) is not None]
            if said and d.id not in out:
                out[d.id] = str(said[0] != other).lower()
    return out


def path_agreement(drafted: Sop, hand: Sop) -> dict[str, Any]:
    """On how many of the hand-written SOP's paths the draft clicks the same actions."""
    actions = _actions()
    inv = cited_match(drafted, hand)
    paths = enumerate_paths(hand)
    same = unanswered = 0
    for spec in paths:
        want = [c for a in spec.actions for c in clicks(hand.nodes[a], actions)]
        answer = oracle(drafted, inv, dict(spec.decisions))
        got = walk(drafted, answer, lambda n: clicks(n, actions))
        unanswered += got is None
        same += got == want
    n = len(paths)
    return {"paths": n, "same_clicks": same, "unanswered": unanswered,
            "path_agreement": round(same / n, 3) if n else 0.0}  # fmt: skip


def baseline(hand: Sop) -> int:
    """The trivial baseline: on how many of the hand-written SOP's paths the most common click
    sequence among them is the path's."""
    actions = _actions()
    seqs = [tuple(c for a in spec.actions for c in clicks(hand.nodes[a], actions))
            for spec in enumerate_paths(hand)]  # fmt: skip
    return max(map(seqs.count, seqs), default=0)


def cited(sop: Sop) -> tuple[int, int]:
    """(nodes whose source cites a document sentence, nodes)."""
    citing = [n for n in sop.nodes.values() if re.search(r"\(s\d+\)", n.source or "")]
    return len(citing), len(sop.nodes)


def run(
    out: Path, samples: int, repairs: int, only: list[str] | None = None, draft: bool = True
) -> list[dict[str, Any]]:
    """Draft every intent's document (or ``only`` those) under ``out`` and compare it with
    the hand-written SOP (``draft=False``: compare the drafts already there)."""
    rows = []
    todo = {k: v for k, v in intents().items() if not only or k in only}
    for i, (key, (flow, sub)) in enumerate(todo.items(), 1):
        doc = out / "documents" / f"{key}.md"
        doc.parent.mkdir(parents=True, exist_ok=True)
        doc.write_text(document(flow, sub), encoding="utf-8")
        dest = out / "drafts" / key
        row: dict[str, Any] = {"intent": key}
        if draft:
            began = time.perf_counter()
            cmd = [sys.executable, "-m", "sopgraph", "draft", str(doc), "-o", str(dest),
                   "--force", "--samples", str(samples), "--repairs", str(repairs)]  # fmt: skip
            proc = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())
            row["seconds"] = round(time.perf_counter() - began, 1)
            row["exit"] = proc.returncode
            said = proc.stdout.strip().splitlines()[:1] or [proc.stderr.strip()[-300:]]
            print(f"[{i}/{len(todo)}] {key} ({row['seconds']} s): {said[0]}", file=sys.stderr)
        fresh = not draft or row["exit"] == 0  # a failed draft leaves an older folder as it was
        if fresh and (dest / "sop.yaml").exists() and (dest / "draft.json").exists():
            drafted, hand = load_sop(dest / "sop.yaml", check=False), load_sop(ABCD / key)
            meta = json.loads((dest / "draft.json").read_text(encoding="utf-8"))
            row["chosen"] = meta.get("chosen")
            row["candidates"] = meta.get("candidates") or {}
            row["failed_checks"] = row["candidates"].get(meta.get("chosen"))
            row["cited"], row["nodes"] = cited(drafted)
            row |= agreement(drafted, hand) | path_agreement(drafted, hand)
            row["hand_same_clicks"] = path_agreement(hand, hand)["same_clicks"]
            row["baseline_same_clicks"] = baseline(hand)
        rows.append(row)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    head = "| intent | failed checks | nodes cited | node recall / precision | edge recall / precision | paths with the same clicks | unanswered | hand-written, compared the same way | baseline: the most common clicks |"  # noqa: E501
    lines = [head, "|" + "---|" * 9]
    for r in rows:
        if "paths" not in r:
            lines.append(f"| {r['intent']} | no draft (exit {r.get('exit')}) | | | | | | | |")
            continue
        lines.append(
            f"| {r['intent']} | {r['failed_checks']} | {r['cited']}/{r['nodes']} | "
            f"{r['node_recall']} / {r['node_precision']} | {r['edge_recall']} / "
            f"{r['edge_precision']} | {r['same_clicks']}/{r['paths']} | {r['unanswered']} | "
            f"{r['hand_same_clicks']}/{r['paths']} | {r['baseline_same_clicks']}/{r['paths']} |"
        )
    done = [r for r in rows if "paths" in r]
    same, paths = sum(r["same_clicks"] for r in done), sum(r["paths"] for r in done)
    hand = sum(r["hand_same_clicks"] for r in done)
    base = sum(r["baseline_same_clicks"] for r in done)
    lines.append(f"\nall: {same}/{paths} paths with the same clicks ({same / paths:.3f}); "
                 f"the hand-written SOPs compared the same way {hand}/{paths}; "
                 f"the baseline {base}/{paths}" if paths else "\nall: no draft")  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sopgraph.evals.abcd_drafts")
    p.add_argument("--out", type=Path, required=True, help="folder for the documents and drafts")
    p.add_argument("--samples", type=int, default=0, help="model drafts (0: structural only)")
    p.add_argument("--repairs", type=int, default=0)
    p.add_argument("--intent", action="append", help="only this intent (repeat for more)")
    p.add_argument("--score-only", action="store_true",
                   help="compare the drafts already in --out; draft nothing")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = p.parse_args(argv)
    unknown = sorted(set(args.intent or []) - set(intents()))
    if unknown:
        p.error(f"--intent {unknown[0]}: not an intent of examples/abcd ({', '.join(intents())})")
    rows = run(args.out, args.samples, args.repairs, args.intent, not args.score_only)
    print(json.dumps(rows, indent=1) if args.json else table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
