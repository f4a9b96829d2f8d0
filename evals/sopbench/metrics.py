"""SOP-Bench scoring: ECR, C-TSR and TSR with strict and lenient (the reference's substring) matching.

ECR = completed / all; C-TSR = correct / completed; TSR = correct / all. A task with several
output columns is correct only when every column matches.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

_NULLS = {"", "none", "null", "nan", "n/a", "na", "nil"}


def normalise(value: Any) -> str:
    """Lowercase, ``_``/``-`` as spaces, whitespace collapsed, quotes stripped; null-likes -> ""."""
    text = "" if value is None else str(value)
    text = text.strip().strip("\"'`").lower().replace("_", " ").replace("-", " ")
    text = re.sub(r"\s+", " ", text).strip().rstrip(".")
    return "" if text in _NULLS else text


def _same_number(a: str, b: str) -> bool:
    try:
        return float(a) == float(b)
    except ValueError:
        return False


def strict_match(got: Any, expected: Any) -> bool:
    """Equal after normalisation (numbers compare by value)."""
    a, b = normalise(got), normalise(expected)
    return a == b or _same_number(a, b)


def lenient_match(got: Any, expected: Any) -> bool:
    """The reference matcher: strict, or one non-empty text contains the other."""
    a, b = normalise(got), normalise(expected)
    return strict_match(a, b) or (bool(a) and bool(b) and (a in b or b in a))


def all_match(answer: dict[str, Any] | None, expected: dict[str, str], lenient: bool) -> bool:
    if not answer:
        return False
    match = lenient_match if lenient else strict_match
    return all(match(answer.get(col), want) for col, want in expected.items())


class Summary(BaseModel):
    """The figures of one run (one domain, one agent, one registry size)."""

    n: int
    completed: int
    correct_strict: int
    correct_lenient: int
    ecr: float
    ctsr_strict: float
    tsr_strict: float
    ctsr_lenient: float
    tsr_lenient: float
    tokens_per_task: float
    seconds_per_task: float


def summarise(records: Iterable[dict[str, Any]]) -> Summary:
    """Summarise per-task records (``completed``, ``strict``, ``lenient``, ``tokens``, ``seconds``)."""
    rs = list(records)
    n = len(rs)
    done = [r for r in rs if r["completed"]]
    ok_s = sum(1 for r in done if r["strict"])
    ok_l = sum(1 for r in done if r["lenient"])

    def ratio(a: int, b: int) -> float:
        return a / b if b else 0.0

    return Summary(
        n=n,
        completed=len(done),
        correct_strict=ok_s,
        correct_lenient=ok_l,
        ecr=ratio(len(done), n),
        ctsr_strict=ratio(ok_s, len(done)),
        tsr_strict=ratio(ok_s, n),
        ctsr_lenient=ratio(ok_l, len(done)),
        tsr_lenient=ratio(ok_l, n),
        tokens_per_task=ratio(sum(r["tokens"]["total_tokens"] for r in rs), n),
        seconds_per_task=sum(r["seconds"] for r in rs) / n if n else 0.0,
    )


def majority_tsr(records: Iterable[dict[str, Any]]) -> float:
    """The trivial baseline: TSR of always giving the commonest expected answer of these tasks."""
    labels = [json.dumps(r["expected"], sort_keys=True).lower() for r in records]
    return max(Counter(labels).values()) / len(labels) if labels else 0.0
