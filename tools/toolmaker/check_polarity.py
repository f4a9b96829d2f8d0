"""Which declared value a record test must find for the verdict to be true: read from the texts
of the node's branches, never from names or labels.

A typed record tool declares a field's values (``authentication_status: success | failed``) and
a sampled Check tests the field for one of them (``equals``). Which one makes the verdict true
is the part a small model gets wrong: it takes the first declared value whatever the procedure
says. The procedure says it in the branches. A drafted or imported SOP's ``true`` branch is the
sentence "if account authentication fails, ...", its ``false`` branch "else if ... is
successful, ...": a value is *stated* by a branch when every word of it (stemmed as the drafter
stems) is in the branch's condition clause (the text before its first comma, colon or
``then``). When exactly one declared value is stated by the true branch and not by the false
one, a Check whose test gives the other verdict for it (or the true verdict for a value the false
branch states) is set to test that value: ``equals`` it, ``> 0``. When the true branch states
none and the false branch exactly one, the Check is set to be true when the field is not that
value (``< 1``). A formula over tests of that one field (``abs(a - b)`` of two of its values)
is a function of the field's value too, judged by its verdict for each declared value, and set
to the one test the same way. Anything else (two values stated, none, a field with no declared
values, a formula over other measurements) says nothing and the Check stays as drawn.

When no value is stated whole by either branch, a second reading goes by polarity: a clause is
negated when it holds a negation ("no", "not", "none", "never", "without", "n't"), and a value
is stated by a clause of its own polarity that holds one of its other words ("outage reported"
by "if there is an outage"), or, for a value that is only a negation ("none"), by any negated
clause ("if there is no outage").

Example:
    >>> declared = ["success", "failed"]
    >>> stated_values(declared, ["if account authentication fails, advise the customer"])
    ['failed']
"""

from __future__ import annotations

import re
from typing import Any

from sopgraph.graphs.drafting.words import split_condition, stems
from sopgraph.graphs.model import Node, Sop
from sopgraph.tools.spec.errors import SpecError
from sopgraph.tools.spec.expr import evaluate, names
from sopgraph.tools.spec.measures import OPS


def stated_values(declared: list[Any], texts: list[str]) -> list[Any]:
    """The declared values every word of which is in one of the texts' condition clauses."""
    heads = [stems(split_condition(t)[0]) for t in texts]
    out = []
    for value in declared:
        words = stems(str(value).replace("_", " "))
        if words and any(words <= head for head in heads):
            out.append(value)
    return out


NEGATIONS = frozenset({"no", "not", "none", "never", "without", "nothing"})


def _negated(text: str) -> bool:
    words = re.findall(r"[a-z']+", text.lower())
    return any(w in NEGATIONS or w.endswith("n't") for w in words)


def polar_values(declared: list[Any], texts: list[str]) -> list[Any]:
    """The declared values a condition clause of the same polarity states in part: one of the
    value's words other than its negation is there, or, for a bare negation, any negated clause."""
    heads = [(_negated(h), stems(h)) for h in (split_condition(t)[0] for t in texts)]
    out = []
    for value in declared:
        raw = str(value).replace("_", " ")
        negative = _negated(raw)
        content = stems(" ".join(w for w in raw.lower().split() if w not in NEGATIONS))
        if any(
            negated == negative and (content & words if content else negative)
            for negated, words in heads
        ):
            out.append(value)
    return out


def _branch_texts(sop: Sop, node: Node, branch: str) -> list[str]:
    return [sop.nodes[c].text for c in getattr(node.next, branch) if c in sop.nodes]


def _hit(test: dict[str, Any], value: Any) -> float:
    return float(
        value == test["equals"] if "equals" in test else value in (test.get("one_of") or ())
    )


def _field_tests(spec: dict[str, Any]) -> dict[str, dict[str, Any]] | None:
    """The measurements the Check's value reads, when each tests one and the same record field
    (``equals`` or ``one_of``): the Check is then a function of that field's value. Else None."""
    measures = spec.get("measures") or {}
    try:
        used = names(str(spec.get("value", "")))
    except SpecError:
        return None
    tests = {n: measures.get(n) for n in sorted(used)}
    if not tests or not all(isinstance(t, dict) and {"equals", "one_of"} & t.keys()
                            for t in tests.values()):  # fmt: skip
        return None
    fields = {(t.get("server"), t.get("tool"), t.get("field")) for t in tests.values()}
    return tests if len(fields) == 1 else None


def _verdicts(
    spec: dict[str, Any], tests: dict[str, dict[str, Any]], values: list[Any]
) -> dict[Any, bool | None]:
    """The verdict the Check gives for each value of the tested field (None: no number)."""
    out: dict[Any, bool | None] = {}
    for v in values:
        try:
            x = evaluate(str(spec["value"]), {n: _hit(t, v) for n, t in tests.items()})
        except (ZeroDivisionError, SpecError):
            out[v] = None
            continue
        out[v] = OPS[spec["op"]](x * spec.get("scale", 1), spec["threshold"])
    return out


def stated_test(
    spec: dict[str, Any], records: dict[str, dict[str, dict[str, dict[str, Any]]]],
    sop: Sop, node: Node,
) -> tuple[dict[str, Any], str | None]:  # fmt: skip
    """The Check set to test the value the node's branches state (and the note saying so), or
    the Check as it was and None."""
    tests = _field_tests(spec)
    if tests is None or spec.get("op") not in OPS or isinstance(spec.get("threshold"), str):
        return spec, None
    name, test = next(iter(tests.items()))
    fields = records.get(str(test.get("server")), {}).get(str(test.get("tool")), {})
    declared = list((fields.get(str(test.get("field"))) or {}).get("enum") or [])
    if len(declared) < 2:
        return spec, None
    true_texts, false_texts = _branch_texts(sop, node, "true"), _branch_texts(sop, node, "false")
    yes, no = stated_values(declared, true_texts), stated_values(declared, false_texts)
    if not yes and not no:
        yes, no = polar_values(declared, true_texts), polar_values(declared, false_texts)
    verdicts = _verdicts(spec, tests, declared)
    if len(yes) == 1 and yes[0] not in no:
        want, op, said = yes[0], ">", f"the true branch states {yes[0]!r}"
        if verdicts[want] and not any(verdicts[v] for v in no):
            return spec, None
    elif not yes and len(no) == 1:
        want, op, said = no[0], "<", f"the false branch states {no[0]!r}"
        if not verdicts[want] and all(verdicts[v] for v in declared if v != want):
            return spec, None
    else:
        return spec, None
    fixed = {k: v for k, v in test.items() if k != "one_of"} | {"equals": want}
    threshold = 0 if op == ">" else 1
    was = "" if str(spec["value"]).strip() == name else f" (was {spec['value']})"
    note = f"{name}: equals {want!r}, {op} {threshold}{was}: {said} ({node.id})"
    kept = {k: v for k, v in spec.items() if k != "zero_division"}
    return (
        {**kept, "value": name, "measures": {name: fixed}, "scale": 1, "op": op,
         "threshold": threshold},
        note,
    )  # fmt: skip
