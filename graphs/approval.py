"""Action nodes: how a human's (or a policy's) answer to a gated action becomes a decision."""

from __future__ import annotations

from typing import Any

APPROVE = {"approve", "approved", "yes", "y", "ok", "true", "accept"}
REJECT = {"reject", "rejected", "no", "n", "false", "deny", "denied"}


class DecisionError(ValueError):
    """A resume value that is neither approve nor reject."""


def decide_approval(answer: Any) -> bool:
    """``approve``/``reject`` (or a bool, or ``{"decision": ...}``) to True/False.

    Example:
        >>> decide_approval({"decision": "approve"})
        True
    """
    if isinstance(answer, dict):
        answer = answer.get("decision", answer.get("approved"))
    if isinstance(answer, bool):
        return answer
    word = str(answer).strip().lower()
    if word in APPROVE:
        return True
    if word in REJECT:
        return False
    raise DecisionError(f"decision must be 'approve' or 'reject', got {answer!r}")
