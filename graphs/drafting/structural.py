"""A draft made without the model, from the document's structure and wording alone: one more
candidate beside the model's samples, which the checks choose among (as the tool-maker's
LLM-free search sits beside its samples).

It gives every procedure sentence the same answer a model step gives (``steps.py``'s form),
read from how any written procedure states a branch:

- a conditional sentence ("If ...", "When ...", "Unless ...", "In case ...") follows the
  earlier step its condition's words overlap most (the step that found out what the condition
  tests); a conditional list item nested under a step follows the earlier item beside it that
  its condition overlaps, else the step it stands under; a condition with no such words
  ("If it was, ...") follows the nearest earlier step that is not itself a branch; a label
  before a condition ("(Option A) If ...") is read past;
- a condition that shares most of its words with an earlier condition ("fails" /
  "is successful") is that condition's alternative: the same parent, the other branch;
  "Otherwise ..." / "Else ..." is the other branch of the condition before it;
- the branch is read from the condition's polarity: a negation or failure word ("not", "no",
  "fails", "invalid", ...) or "unless" is ``no``; the first condition of a step otherwise
  ``yes``, a later one the branch still free;
- "After X, ..." follows the step that X's words overlap most; any other sentence follows the
  step before it; where the procedure goes on after a branch (joins, skips, the other result
  of a one-branch condition) is ``continuation.py``'s;
- a step some condition branches on is a decision; every other one an action, and an action
  that ends a path ends in the stated outcome whose words its branch overlaps most;
- an entry observes: the document's opening statement where there is one
  (``document.scope_of``; ``steps.assemble`` places it for every candidate); else a first
  step that acts follows the lead-in before it (the first background sentence that reads as
  procedure), made the entry observation; with neither, the first step is the observation.

Words are compared by a crude stem (suffixes cut: "authentication" and "authenticate" meet),
weighted by how rare they are in the document. Nothing here names one SOP's words.
"""

from __future__ import annotations

import re

from sopgraph.graphs.drafting.continuation import go_on
from sopgraph.graphs.drafting.document import Sentence
from sopgraph.graphs.drafting.steps import NONE, START, Plan, outcome_id
from sopgraph.graphs.drafting.words import (
    OTHERWISE,
    Weights,
    name_stems,
    opens_with_condition,
    split_condition,
    stems,
)

_AFTER = re.compile(r"^(?:after|once|following|having)\b", re.I)
# a label before a condition: "(Option A) If they get an extension", "Case 2: If ..."
_LABEL = re.compile(r"^(?:\([^)]{1,30}\)|(?:option|case|step)\s+\w{1,3}\s*[:.)-])\s*", re.I)
SIBLING_SHARE = 0.6  # of the smaller condition's words: two conditions test the same thing
_NEGATIVE = re.compile(
    r"\b(?:not|no|none|never|cannot|can't|isn't|doesn't|don't|without|unless|fails?|failed|"
    r"failure|unsuccessful|invalid|incorrect|missing|denied|rejected|refused|unable|lacks?)\b",
    re.I,
)


def _nesting(section: list[Sentence]) -> dict[int, int]:
    """A nested list item -> the list item it stands under (by indentation)."""
    out: dict[int, int] = {}
    stack: list[Sentence] = []
    for s in section:
        if s.kind != "item":
            stack = []
            continue
        while stack and stack[-1].indent >= s.indent:
            stack.pop()
        if stack:
            out[s.number] = stack[-1].number
        stack.append(s)
    return out


def structural_answers(plan: Plan) -> dict[int, dict[str, str]]:
    """Every procedure sentence's answer (role, after, when, outcome, data) from structure."""
    order = [plan.doc.sentence(n) for n in plan.order]
    sentences = [s for s in order if s is not None]
    context = _context(sentences)
    sentences = [s for s in sentences if s.number not in context]
    weights = Weights([s.text for s in plan.doc.sentences])
    nested: dict[int, int] = {}
    for section in plan.sections:
        nested.update(_nesting(section))
    # per sentence: its condition's stems (conditional ones) and its consequence's stems
    cond: dict[int, set[str]] = {}
    does: dict[int, set[str]] = {}
    parent: dict[int, int | None] = {}  # None: start
    when: dict[int, str] = {}
    branches: dict[int | None, dict[str, int]] = {}  # parent -> branch -> first child
    last_condition: int | None = None
    for i, s in enumerate(sentences):
        earlier = sentences[:i]
        text = _LABEL.sub("", s.text)
        conditional = opens_with_condition(text)
        if m := OTHERWISE.match(text):  # "Otherwise[,] X": no condition of its own
            cond[s.number], does[s.number] = set(), stems(text[m.end() :])
        elif conditional:
            c, rest = split_condition(text)
            cond[s.number], does[s.number] = stems(c), stems(rest)
        else:
            does[s.number] = stems(text)
        if OTHERWISE.match(text) and last_condition is not None:
            p = parent[last_condition]
            taken = when[last_condition]
            parent[s.number] = p
            when[s.number] = "no" if taken == "yes" else "yes"
        elif conditional:
            p, sibling = _conditional_parent(s, earlier, cond, does, parent, nested, weights)
            parent[s.number] = p
            when[s.number] = _branch(cond_text=split_condition(text)[0], sibling=sibling, when=when,
                                     free=branches.get(p, {}))  # fmt: skip
        else:
            parent[s.number] = _plain_parent(s, earlier, does, nested, weights)
            when[s.number] = "always"
        if conditional:
            last_condition = s.number
            branches.setdefault(parent[s.number], {}).setdefault(when[s.number], s.number)
    words = {n: does[n] | cond.get(n, set()) for n in does}
    out = _answers(plan, sentences, parent, when, words, weights)
    for n, step in out.items():  # what the step does names the data that decides it
        if step["role"] == "decision" and plan.catalog:
            step["data"] = _data_hint(does[n], plan.catalog, plan.about, weights)
    go_on(plan, sentences, parent, when, nested, out, weights)
    lead = _lead_in(sentences, context, out, plan.ids) if plan.scope is None else None
    for n in context:
        out[n] = {"role": "decision" if n == lead else "context", "after": START,
                  "when": "always", "outcome": NONE, "data": NONE}  # fmt: skip
    return out


def _lead_in(
    sentences: list[Sentence],
    context: set[int],
    out: dict[int, dict[str, str]],
    ids: dict[int, str],
) -> int | None:
    """An entry observes, it does not act: where the first step is an action, the first
    background sentence before it that reads as procedure (a lead-in: "In all three cases for
    return, follow the same set of actions:") becomes the entry observation the step follows;
    with none, the first step itself is made the observation (and its action is lost). Plain
    background ("The customer wants to upgrade ...") is not in the plan, so it is no lead-in."""
    if not sentences or out[sentences[0].number]["role"] != "action":
        return None
    first = sentences[0].number
    before = sorted(n for n in context if n < first)
    if not before:
        out[first]["role"] = "decision"
        return None
    out[first]["after"] = ids[before[0]]
    return before[0]


def _context(sentences: list[Sentence]) -> set[int]:
    """Where the steps are list items, the prose around them that states no condition is a
    lead-in or background, not a step."""
    if not any(s.kind == "item" for s in sentences):
        return set()
    return {s.number for s in sentences if s.kind == "text" and not opens_with_condition(s.text)}


def _conditional_parent(
    s: Sentence,
    earlier: list[Sentence],
    cond: dict[int, set[str]],
    does: dict[int, set[str]],
    parent: dict[int, int | None],
    nested: dict[int, int],
    weights: Weights,
) -> tuple[int | None, int | None]:
    """The step a condition branches on, and the earlier condition it is the alternative of."""
    mine = cond[s.number]
    for t in reversed(earlier):  # an alternative of an earlier condition: the same parent
        theirs = cond.get(t.number)
        if theirs and mine and len(mine & theirs) >= SIBLING_SHARE * min(len(mine), len(theirs)):
            if nested.get(s.number) == nested.get(t.number):
                return parent[t.number], t.number
    if s.number in nested:  # the earlier item beside it that found out what it tests, else
        item = nested[s.number]  # the item it stands under
        branching = {t.line for t in earlier if t.number in cond}  # a sentence of a case
        beside = [t for t in earlier if nested.get(t.number) == item and t.number not in cond
                  and t.line not in branching]  # fmt: skip
        scored = [(weights.overlap(mine, does[t.number]), t.number) for t in beside]
        best = max(scored, default=(0.0, item))
        return (best[1] if best[0] > 0 else item), None
    best, score = None, 0.0
    for t in earlier:  # later ones win a tie: the nearest step that found it out
        got = weights.overlap(mine, does[t.number] | (cond.get(t.number, set()) - mine))
        if got >= score and got > 0:
            best, score = t.number, got
    if best is not None:
        return best, None
    plain = [t for t in earlier if t.number not in cond]
    fallback = plain[-1] if plain else (earlier[-1] if earlier else None)
    return (fallback.number if fallback else None), None


def _branch(cond_text: str, sibling: int | None, when: dict[int, str], free: dict[str, int]) -> str:
    if sibling is not None and when.get(sibling) in ("yes", "no"):
        return "no" if when[sibling] == "yes" else "yes"
    if _NEGATIVE.search(cond_text):
        return "no"
    if "yes" in free and "no" not in free:
        return "no"
    return "yes"


def _plain_parent(
    s: Sentence,
    earlier: list[Sentence],
    does: dict[int, set[str]],
    nested: dict[int, int],
    weights: Weights,
) -> int | None:
    if not earlier:
        return None
    if _AFTER.match(s.text):
        head = stems(split_condition(s.text)[0])
        scored = [(weights.overlap(head, does[t.number]), i) for i, t in enumerate(earlier)]
        got, i = max(scored)
        if got > 0:
            return earlier[i].number
    under = nested.get(s.number)
    siblings = [t for t in earlier if nested.get(t.number) == under and t.number != under]
    if under is not None and not [t for t in siblings if t.number > under]:
        return under  # the first item under a step follows the step
    return earlier[-1].number


def _answers(
    plan: Plan,
    sentences: list[Sentence],
    parent: dict[int, int | None],
    when: dict[int, str],
    does: dict[int, set[str]],
    weights: Weights,
) -> dict[int, dict[str, str]]:
    children: dict[int, list[int]] = {}
    for n, p in parent.items():
        if p is not None:
            children.setdefault(p, []).append(n)
    decisions = {p for n, p in parent.items() if p is not None and when[n] in ("yes", "no")}
    outcomes = [(outcome_id(o), _outcome_words(plan, o)) for o in plan.outcomes]
    ends = [s.number for s in sentences if s.number not in decisions | set(children)]
    ended = _ends_in(ends, outcomes, parent, when, does, weights)
    out: dict[int, dict[str, str]] = {}
    for s in sentences:
        n = s.number
        p = parent[n]
        out[n] = {
            "role": "decision" if n in decisions else "action",
            "after": START if p is None else plan.ids[p],
            "when": when[n],
            "outcome": ended.get(n, NONE),
            "data": NONE,
        }
    return out


def _data_hint(does: set[str], catalog: list[str], about: dict[str, str], weights: Weights) -> str:
    """The catalog name that what a decision's step does names ("verify the customer's account
    status" -> ``server.verify_customer_account``): the name's own words count in full, the
    words of what it is about (a tool's description, its record's fields) half. At least two
    words shared, and no tie; else none (the step stays a judgement step)."""
    scored = []
    for c in catalog:
        name, rest = name_stems(c), stems(about[c].about if c in about else "")
        shared = does & (name | rest)
        got = weights.overlap(does, name) + 0.5 * weights.overlap(does, rest - name)
        scored.append((got if len(shared) >= 2 else 0.0, c))
    scored.sort(reverse=True)
    if not scored or scored[0][0] <= 0 or (len(scored) > 1 and scored[1][0] == scored[0][0]):
        return NONE
    return scored[0][1]


def _ends_in(
    ends: list[int],
    outcomes: list[tuple[str, tuple[set[str], set[str]]]],
    parent: dict[int, int | None],
    when: dict[int, str],
    does: dict[int, set[str]],
    weights: Weights,
) -> dict[int, str]:
    """The outcome each path's end gives: the pairs whose words overlap most first, each
    outcome and each end once (every stated outcome is some path's end); then an end left over
    takes the outcome it overlaps most."""
    scores: dict[tuple[int, int], float] = {}
    for n in ends:
        branch = _branch_words(n, parent, when, does)
        for i, (_, (value, meaning)) in enumerate(outcomes):
            got = weights.overlap(value, branch) + 0.5 * weights.overlap(meaning, branch)
            if got > 0:
                scores[(n, i)] = got
    out: dict[int, str] = {}
    used: set[int] = set()
    for (n, i), _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0])):
        if n not in out and i not in used:
            out[n] = outcomes[i][0]
            used.add(i)
    for (n, i), _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0])):
        out.setdefault(n, outcomes[i][0])
    return out


def _outcome_words(plan: Plan, o) -> tuple[set[str], set[str]]:
    s = plan.doc.sentence(o.sentence)
    meaning = s.text.partition(":")[2] if s and ":" in s.text else ""
    return stems(o.value), stems(meaning) - stems(o.value)


def _branch_words(
    n: int, parent: dict[int, int | None], when: dict[int, str], does: dict[int, set[str]]
) -> set[str]:
    """A path's end and the steps before it back to the branch that leads there."""
    words: set[str] = set()
    seen: set[int] = set()
    at: int | None = n
    while at is not None and at not in seen:
        seen.add(at)
        words |= does[at]
        if when[at] in ("yes", "no"):
            break
        at = parent[at]
    return words
