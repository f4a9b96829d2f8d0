"""Which children of a node fire, given its verdict: verdict edges, predicates, and NL conditions."""

from __future__ import annotations

from typing import Any

from sopgraph.graphs.model import Node, Predicate, Verdict

_MISSING = object()


def lookup(observed: Any, var: str) -> Any:
    """``observed[var]`` with dotted paths; ``_MISSING`` when absent."""
    cur = observed
    for part in var.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            return _MISSING
    return cur


def _norm(x: Any) -> Any:
    return x.strip().lower() if isinstance(x, str) else x


def predicate_holds(pred: Predicate, verdict: Verdict) -> bool:
    """Evaluate ``{var, op, value}`` against a verdict; a missing variable never holds."""
    if pred.var in ("value", "verdict"):
        actual: Any = verdict.value
    elif pred.var == "observed":
        actual = verdict.observed
    else:
        actual = lookup(verdict.observed, pred.var)
    if pred.op == "exists":
        return actual is not _MISSING and actual is not None
    if actual is _MISSING or actual is None:
        return False
    a, b = _norm(actual), _norm(pred.value)
    try:
        match pred.op:
            case "eq":
                return a == b
            case "ne":
                return a != b
            case "lt":
                return a < b
            case "le":
                return a <= b
            case "gt":
                return a > b
            case "ge":
                return a >= b
            case "in":
                return a in [_norm(v) for v in b]
            case "not_in":
                return a not in [_norm(v) for v in b]
            case "contains":
                return b in a
    except TypeError:
        return False
    return False


def fired_children(node: Node, verdict: Verdict) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """Children whose edge fires on ``verdict``, and the natural-language conditions left open.

    Returns ``(children, open_conditions)``; each open condition is ``(text, then)`` for an
    LLM router to decide. Children keep file order and appear once.
    """
    nxt = node.next
    out: list[str] = list(nxt.always)
    out += getattr(nxt, verdict.value)
    open_conditions: list[tuple[str, list[str]]] = []
    for cond in nxt.when:
        if isinstance(cond.if_, str):
            open_conditions.append((cond.if_, cond.then))
        elif predicate_holds(cond.if_, verdict):
            out += cond.then
    return list(dict.fromkeys(out)), open_conditions


def unmatched_reason(verdict: Verdict) -> str:
    """Why a node whose ``next.when`` conditions all failed stopped its branch."""
    seen = f" (observed {verdict.observed!r})" if verdict.observed is not None else ""
    text = f"verdict {verdict.value}{seen} matched no branch"
    return (text if len(text) <= 200 else text[:197] + "...") + "; add a branch for it to the SOP"
