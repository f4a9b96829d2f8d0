"""Where the procedure goes on after a branch, in the structural draft (``structural.py``):

- a step after a list item whose sub-items branch follows the end of every branch that does
  not end in a stated outcome or say it ends ("... and end the conversation") (a join: the
  procedure goes on whichever branch was taken); where some of those branches say they go on
  ("... and go to the next step", "continue", "proceed") and others do not, only those;
- a step that one condition branches on, with no alternative stated ("If the customer asks,
  ..."), goes on past the branch on the other result;
- a sentence that says to skip ("skip to the Refund step below", "skip the next step") goes on
  at the step it names, not at the one after it.

Nothing here names one SOP's words.
"""

from __future__ import annotations

import re

from sopgraph.graphs.drafting.document import Sentence
from sopgraph.graphs.drafting.steps import NONE, Plan
from sopgraph.graphs.drafting.words import Weights, stems

# a branch that says the procedure goes on after it ("... and go to the next step")
_CONTINUE = re.compile(r"\b(?:next step|continue|go on|move on|moving on|proceed)\b", re.I)
# a sentence that says the procedure goes on further down ("skip to the Promo Code step below")
_SKIP = re.compile(
    r"\bskip\s+(?:(?P<next>the next step)|to\s+(?:the\s+)?(?P<name>.+?)"
    r"(?:\s+(?:step|section|part)\b|\s+below\b|\W*$))",
    re.I,
)
# a branch that says the procedure ends there ("... Then [End Conversation]", "stop here")
_ENDS = re.compile(
    r"\b(?:end|stop|terminate|close)\s+(?:the\s+)?(?:conversation|call|chat|"
    r"procedure|process|case|ticket|here)\b",
    re.I,
)


def go_on(
    plan: Plan,
    sentences: list[Sentence],
    parent: dict[int, int | None],
    when: dict[int, str],
    nested: dict[int, int],
    out: dict[int, dict[str, str]],
    weights: Weights,
) -> None:
    """Adds to ``out`` (each sentence's answer) where each branch goes on: joins (``joins``:
    more steps it follows, ``id`` or ``id:no``), the other result of a one-branch condition,
    and skips."""
    text = {t.number: t.text for t in sentences}
    for n, (last, *others) in _joins(sentences, parent, when, nested).items():
        # a branch ending in an outcome ends there; where some say they go on, only those do
        ends = [e for e in [last, *others] if out[e]["outcome"] == NONE or e == last]
        ends = [e for e in ends if not _ENDS.search(text[e])] or ends[:1]
        said = [e for e in ends if _CONTINUE.search(text[e])]
        ends = said if said and len(said) < len(ends) else ends
        out[n]["after"] = plan.ids[ends[0]]
        if len(ends) > 1:
            out[n]["joins"] = ",".join(plan.ids[e] for e in ends[1:])
    for p, (result, target) in _other_results(sentences, parent, when, nested).items():
        out[target]["joins"] = ",".join(filter(None, [out[target].get("joins", ""),
                                                      f"{plan.ids[p]}:{result}"]))  # fmt: skip
    for src, target in _skips(sentences, nested, weights).items():
        _jump(out, plan.ids, src, target)


def _other_results(
    sentences: list[Sentence],
    parent: dict[int, int | None],
    when: dict[int, str],
    nested: dict[int, int],
) -> dict[int, tuple[str, int]]:
    """A step that one condition branches on, with no alternative stated ("If the customer
    asks, ..."): on the other result the procedure goes on past the branch, at the next step
    beside the condition or, with none, the next one further out. Step -> (result, step)."""
    results: dict[int, set[str]] = {}
    first: dict[int, int] = {}
    for s in sentences:
        p = parent[s.number]
        if p is not None and when[s.number] in ("yes", "no"):
            results.setdefault(p, set()).add(when[s.number])
            first.setdefault(p, s.number)
    out: dict[int, tuple[str, int]] = {}
    for p, got in results.items():
        if len(got) != 1:
            continue
        at: int | None = first[p]
        while at is not None:
            level = nested.get(at)
            later = [t.number for t in sentences if t.number > at and nested.get(t.number) == level
                     and parent[t.number] != p]  # fmt: skip
            if later:
                out[p] = ("no" if got == {"yes"} else "yes", later[0])
                break
            at = level
    return out


def _skips(sentences: list[Sentence], nested: dict[int, int], weights: Weights) -> dict[int, int]:
    """Sentences that say where the procedure goes on ("..., skip to the Update Order step
    below", "skip the next step") -> the step they go on at: the later top-level step whose
    words the named step's overlap most, or the one after the next."""
    lines: set[int] = set()  # a step is its item's first sentence: an item may hold several
    top = [t.number for t in sentences
           if t.number not in nested and not (t.line in lines or lines.add(t.line))]  # fmt: skip
    text = {t.number: t.text for t in sentences}
    out: dict[int, int] = {}
    for s in sentences:
        m = _SKIP.search(s.text)
        if not m:
            continue
        mine = s.number
        while mine in nested:
            mine = nested[mine]
        later = [t for t in top if t > mine]
        if m["next"]:
            if len(later) > 1:
                out[s.number] = later[1]
            continue
        named = stems(m["name"])
        under = {t: " ".join(text[u] for u in text if _under(u, t, nested)) for t in later}
        # the name as written (its case kept), then shared words; the step's own words first,
        # then those of the items under it
        name = m["name"].strip()
        scored = [(name in text[t], name in under[t], weights.overlap(named, stems(text[t])),
                   weights.overlap(named, stems(under[t])), -t) for t in later]  # fmt: skip
        if scored and any((best := max(scored))[:4]):
            out[s.number] = -best[4]
    return out


def _jump(out: dict[int, dict[str, str]], ids: dict[int, str], src: int, target: int) -> None:
    """``src`` goes on at ``target``, not at the step after it: it leaves every other step's
    joins, a later step that followed it and other branch ends follows those ends, and
    ``target`` follows it too."""
    sid = ids[src]
    for n, step in out.items():
        if n == target:
            continue
        joins = [j for j in step.get("joins", "").split(",") if j and j != sid]
        if step["after"] == sid and step["when"] == "always" and n > src and joins:
            step["after"], joins = joins[0], joins[1:]
        step["joins"] = ",".join(joins)
    joins = [j for j in out[target].get("joins", "").split(",") if j]
    if out[target]["after"] != sid and sid not in joins:
        out[target]["joins"] = ",".join([*joins, sid])


def _joins(
    sentences: list[Sentence],
    parent: dict[int, int | None],
    when: dict[int, str],
    nested: dict[int, int],
) -> dict[int, list[int]]:
    """A step after a list item whose sub-items branch follows the end of every branch, not
    only of the last one: sentence -> the branch ends, the one before it first (the caller
    drops a branch ending in a stated outcome: it ends there). A branch's end is a sub-item
    reached from within the item through a ``yes``/``no`` result with no step after it; a
    step that follows a plain sub-item (the one after the branches) joins none."""
    out: dict[int, list[int]] = {}
    for i, s in enumerate(sentences[1:], 1):
        last = sentences[i - 1].number
        if parent[s.number] != last or when[s.number] != "always":
            continue
        item = last  # the item at the step's own level that the previous sentence stands under
        while item in nested and nested[item] != nested.get(s.number):
            item = nested[item]
        if item == last:
            continue
        group = {t.number for t in sentences[:i] if _under(t.number, item, nested)}
        has_child = {parent[t] for t in group}
        ends = [t for t in group if t not in has_child and _branched(t, group, parent, when)]
        if last in ends and len(ends) > 1:
            out[s.number] = [last, *sorted(t for t in ends if t != last)]
    return out


def _under(n: int, item: int, nested: dict[int, int]) -> bool:
    """Whether list item ``n`` stands (at any depth) under ``item``."""
    while n in nested:
        n = nested[n]
        if n == item:
            return True
    return False


def _branched(
    n: int | None, group: set[int], parent: dict[int, int | None], when: dict[int, str]
) -> bool:
    """Whether ``n`` is reached within ``group`` through a ``yes``/``no`` result."""
    while n in group:
        if when[n] in ("yes", "no"):
            return True
        n = parent[n]
    return False
