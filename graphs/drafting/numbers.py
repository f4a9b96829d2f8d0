"""The numbers a procedure compares against, each made a parameter with its default, and the
comparison a text states for each of its parameters.

A comparison is a comparative phrase (``more than``, ``at least``, ``below``, ``>=``, ...)
before a number; its parameter is named for the words before the phrase and the bound's side
(``_min`` for a lower bound, ``_max`` for an upper one), and the node text gets ``{name}``
where the number was, so a site can override it. ``stated_ops`` reads the same phrases before
a ``{parameter}`` (or ``or more`` / ``or less`` after it) as the operator they state.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LOWER = r"more than|greater than|higher than|over|above|exceeds?|exceeding|at least|no less than|not less than|>=|>|≥"
_UPPER = r"less than|fewer than|lower than|below|under|at most|no more than|not more than|up to|within|<=|<|≤"
_NUMBER = r"(\d+(?:[.,]\d+)?)"
_COMPARE = re.compile(rf"(?<![\w-])({_LOWER}|{_UPPER})\s*{_NUMBER}", re.IGNORECASE)
_BETWEEN = re.compile(rf"\bbetween\s+{_NUMBER}\s*%?\s+and\s+{_NUMBER}", re.IGNORECASE)
_LOWER_RE = re.compile(rf"^(?:{_LOWER})$", re.IGNORECASE)
# each phrase's operator; "not more than" before "more than", so the longest phrase wins
OPERATORS = {
    "<=": ("no more than", "not more than", "at most", "up to", "within", "<=", "≤"),
    ">=": ("no less than", "not less than", "at least", ">=", "≥"),
    ">": ("more than", "greater than", "higher than", "over", "above", "exceeds", "exceed",
          "exceeding", ">"),
    "<": ("less than", "fewer than", "lower than", "below", "under", "<"),
}  # fmt: skip
_PHRASE = {p: op for op, phrases in OPERATORS.items() for p in phrases}
_BEFORE = "|".join(re.escape(p) for p in sorted(_PHRASE, key=len, reverse=True))
_STATED = re.compile(rf"(?<![\w-])({_BEFORE})\s*\{{(\w+)\}}", re.IGNORECASE)
_STATED_AFTER = re.compile(r"\{(\w+)\}[^\s.,;]*\s+or\s+(more|greater|less|fewer)\b", re.I)
_STOP = {
    "the", "a", "an", "of", "is", "are", "was", "were", "be", "been", "has", "have", "had", "if",
    "when", "than", "then", "that", "this", "it", "its", "for", "to", "in", "on", "at", "by",
    "and", "or", "not", "no", "any", "all", "more", "less", "with", "there", "their", "does",
    "do", "whether", "which", "what", "how",
}  # fmt: skip


@dataclass(frozen=True)
class Comparison:
    """One number a sentence compares against, as a parameter."""

    name: str
    value: int | float
    sentence: int
    start: int  # where the number stands in the sentence's text
    end: int


def _value(text: str) -> int | float:
    text = (
        text.replace(",", ".")
        if text.count(",") == 1 and "." not in text
        else text.replace(",", "")
    )
    number = float(text)
    return int(number) if number.is_integer() else number


_CLAUSE = re.compile(r"[,;:()]|\b(?:and|or|but|then)\b", re.IGNORECASE)


def _words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z][a-z0-9]*", text.lower()) if w not in _STOP]


def _subject(before: str, after: str) -> str:
    """What is compared: the content words of the clause before the comparison (its last
    three), else the two words after the number (``between 2 and 8 robots``)."""
    words = _words(_CLAUSE.split(before)[-1])[-3:] or _words(after)[:2]
    return "_".join(words)


def find_comparisons(text: str, sentence: int, taken: set[str]) -> list[Comparison]:
    """The comparisons of one sentence; names already in ``taken`` get the sentence number.

    Example:
        >>> [c.name for c in find_comparisons("If idle time is more than 25%, alert.", 3, set())]
        ['idle_time_min']
    """
    out: list[Comparison] = []

    def add(stem: str, side: str, number: re.Match, group: int) -> None:
        base = f"{stem or 'threshold'}_{side}"
        name = base if base not in taken else f"{base}_s{sentence}"
        k = 2
        while name in taken:
            name, k = f"{base}_s{sentence}_{k}", k + 1
        taken.add(name)
        out.append(
            Comparison(
                name, _value(number[group]), sentence, number.start(group), number.end(group)
            )
        )

    spans: list[tuple[int, int]] = []
    for m in _BETWEEN.finditer(text):
        stem = _subject(text[: m.start()], text[m.end() :])
        add(stem, "low", m, 1)
        add(stem, "high", m, 2)
        spans.append(m.span())
    for m in _COMPARE.finditer(text):
        if any(a <= m.start() < b for a, b in spans):
            continue
        side = "min" if _LOWER_RE.match(m[1].strip()) else "max"
        add(_subject(text[: m.start()], text[m.end() :]), side, m, 2)
    return sorted(out, key=lambda c: c.start)


def with_placeholders(text: str, comparisons: list[Comparison]) -> str:
    """``text`` with each compared number replaced by its ``{parameter}``."""
    for c in sorted(comparisons, key=lambda c: c.start, reverse=True):
        text = text[: c.start] + "{" + c.name + "}" + text[c.end :]
    return text


def stated_ops(text: str) -> dict[str, str]:
    """``parameter -> operator`` for each parameter ``text`` compares against in words, in the
    text's order, and only those it compares one way (a parameter stated two ways, or after a
    negation such as ``not below``, is left out).

    Example:
        >>> stated_ops("The amount is above {max_refund}; {n} or more retries; within {d} days.")
        {'max_refund': '>', 'n': '>=', 'd': '<='}
    """
    found: dict[str, tuple[int, set[str]]] = {}

    def add(name: str, at: int, op: str) -> None:
        first, ops = found.setdefault(name, (at, set()))
        found[name] = (min(first, at), ops | {op})

    for m in _STATED.finditer(text):
        negated = re.search(r"\b(?:not|never|no)\s*$", text[: m.start()], re.IGNORECASE)
        add(m[2], m.start(), "?" if negated else _PHRASE[m[1].lower()])
    for m in _STATED_AFTER.finditer(text):
        add(m[1], m.start(), ">=" if m[2].lower() in ("more", "greater") else "<=")
    ordered = sorted(found.items(), key=lambda item: item[1][0])
    return {name: next(iter(ops)) for name, (_, ops) in ordered if len(ops) == 1 and "?" not in ops}
