"""The operating envelope of a slow local model: output budgets per role and timeouts derived from them.

A CPU model generates ~11 tokens/s on a quiet 2-core machine and ~3 when the machine is busy,
and evaluates a prompt at ~46 tokens/s. Each LLM role gets an output budget that fits its
answer, and a request's timeout follows from its prompt length, its budget and the slowest
measured speed, so a slow reply is waited for and a runaway one is not.

Example:
    >>> budget("route")
    48
    >>> round(request_timeout(prompt_chars=4000, max_tokens=48))
    106
"""

from __future__ import annotations

import json
from typing import Any, Literal

Role = Literal["codeact", "verdict", "route", "judge", "toolmaker", "default"]

BUDGETS: dict[Role, int] = {
    "codeact": 320,  # one turn: a short code block, or ANSWER/VERDICT/OBSERVED/THRESHOLD
    "verdict": 160,  # the extractor's JSON: value, observed, threshold, one sentence
    "route": 48,  # one function call, or a list of branch numbers
    "judge": 96,  # holds + one sentence
    "toolmaker": 1024,  # a whole compiled tool
    "default": 512,
}
"""Output tokens per call of each role on the local model."""

PROMPT_TOKENS_PER_S = 20.0
"""Prompt evaluation, slowest measured (46/s quiet; about half when others use the CPU)."""
GEN_TOKENS_PER_S = 2.5
"""Generation, slowest measured (11/s quiet, 3.5/s under load)."""
CHARS_PER_TOKEN = 3.5
SLACK_S = 30.0
"""Fixed allowance per request (HTTP, sampling setup, a grammar's compilation)."""


def budget(role: Role) -> int:
    """The output budget of ``role`` on the local model."""
    return BUDGETS[role]


def request_timeout(*, prompt_chars: int, max_tokens: int) -> float:
    """Seconds one request may take once the model starts on it: prompt plus budget at the slowest speed.

    The whole prompt counts, as if no prefix were cached; a cached prefix only makes it faster.
    """
    prompt_tokens = prompt_chars / CHARS_PER_TOKEN
    return SLACK_S + prompt_tokens / PROMPT_TOKENS_PER_S + max_tokens / GEN_TOKENS_PER_S


def timeout_for_request(body: bytes) -> float:
    """``request_timeout`` for an OpenAI-style request body (its messages and ``max_tokens``)."""
    try:
        request = json.loads(body or b"{}")
    except ValueError:
        return request_timeout(prompt_chars=len(body), max_tokens=BUDGETS["default"])
    if not isinstance(request, dict):
        return request_timeout(prompt_chars=len(body), max_tokens=BUDGETS["default"])
    prompt = json.dumps(request.get("messages") or request.get("prompt") or "")
    prompt += json.dumps(request.get("tools") or "")
    max_tokens = request.get("max_tokens") or request.get("max_completion_tokens")
    return request_timeout(
        prompt_chars=len(prompt), max_tokens=int(max_tokens or BUDGETS["default"])
    )


def role_chat(model: Any, role: Role) -> Any:
    """``model`` with the role's output budget when it is the local model, else ``model`` itself.

    Only a chat model built for the local provider carries ``budgets_by_role``; a hosted model
    keeps the budget its settings give it.
    """
    if model is None or not getattr(model, "budgets_by_role", False):
        return model
    return model.model_copy(update={"max_tokens": budget(role)})


def role_lm(lm: Any, role: Role) -> Any:
    """The DSPy LM with the role's output budget when it is the local model, else ``lm`` itself."""
    if lm is None or not getattr(lm, "budgets_by_role", False):
        return lm
    if lm.kwargs.get("max_tokens") == budget(role):
        return lm
    copy = lm.copy(max_tokens=budget(role))
    copy.budgets_by_role = True
    return copy
