"""Prompts for deciding natural-language conditions: the function-calling router's texts and
the DSPy signatures of the branch chooser (``ChooseBranch``) and the condition judge
(``JudgeCondition``).

The router prompt follows SOP-agent (Ye et al., 2025): the current step, what it observed and
the conversation, then one function per branch with the branch's condition; the model calls
the functions of every branch whose condition holds.
"""

from __future__ import annotations

import json
from typing import Any

import dspy

NONE_FUNCTION = "no_condition_holds"
"""Offered next to the branches: a condition an SOP leaves open may well not hold."""

CONTEXT_CHARS = 2000
"""How much of the run input the prompts show; a dialogue keeps its latest turns."""

ROUTER_SYSTEM = """\
You follow a standard operating procedure (SOP) one step at a time. The current step has just
been carried out. Decide which of the next branches apply: each function stands for one branch,
and its description is the branch's condition. Call the function of every branch whose
condition holds, several if several hold. If none holds, call `{none}`. Do not answer in text:
reply only with function calls."""

ROUTER_REQUEST = """\
## Current step
{node_text}

## What it found
{observed}

## Context
{context}

## Branches (call the function of every branch whose condition holds)
{branches}"""

ROUTER_CORRECTION = """\
Your reply was not usable: {problem}. Reply only with function calls, choosing among: \
{functions}."""

_DIALOGUE_KEYS = ("messages", "dialogue", "conversation", "history")
_LATEST_KEYS = ("user_message", "last_user_message", "message", "utterance", "query")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 15] + " ...[clipped]"


def _turn(turn: Any) -> tuple[str, str]:
    if isinstance(turn, dict):
        role = str(turn.get("role") or turn.get("speaker") or "user")
        return role, str(turn.get("content") or turn.get("text") or "")
    return "user", str(turn)


def render_context(inp: dict[str, Any], limit: int = CONTEXT_CHARS) -> str:
    """The run input as the router and the judge see it: the dialogue with its latest user
    message first when there is one, then the other fields as JSON."""
    lines: list[str] = []
    rest = dict(inp)
    latest = next((str(rest.pop(k)) for k in _LATEST_KEYS if isinstance(rest.get(k), str)), None)
    dialogue_key = next((k for k in _DIALOGUE_KEYS if isinstance(rest.get(k), list)), None)
    if dialogue_key is not None:
        turns = [_turn(t) for t in rest.pop(dialogue_key)]
        if latest is None:
            latest = next(
                (text for role, text in reversed(turns) if role in ("user", "human")), None
            )
        # the latest turns matter most: keep them when the dialogue is long
        shown = [f"{role}: {text}" for role, text in turns][-12:]
        lines.append("Dialogue:\n" + "\n".join(shown))
    if latest is not None:
        lines.insert(0, f"Latest user message: {latest}")
    if rest:
        lines.append("Input: " + json.dumps(rest, default=str, ensure_ascii=False))
    return _clip("\n\n".join(lines) or "(none)", limit)


def render_observed(value: str, observed: Any, explanation: str = "") -> str:
    """A verdict in a line or two for the prompts."""
    text = f"verdict: {value}"
    if observed is not None:
        text += f"\nobserved: {_clip(json.dumps(observed, default=str), 800)}"
    if explanation:
        text += f"\nexplanation: {_clip(explanation, 400)}"
    return text


def render_branches(functions: list[tuple[str, str]]) -> str:
    """``- name: description`` lines (some servers show the model only the function names)."""
    return "\n".join(f"- {name}: {description}" for name, description in functions)


def numbered_conditions(conditions: list[str]) -> str:
    """The branches for ``ChooseBranch``: ``1. <condition>`` lines."""
    return "\n".join(f"{i}. {text}" for i, text in enumerate(conditions, 1))


class ChooseBranch(dspy.Signature):
    """You follow a standard operating procedure (SOP) one step at a time. The current step has
    just been carried out; choose the next branches whose condition holds, given what the step
    found and the context. Several branches may hold; none may hold."""

    node_text: str = dspy.InputField(desc="the SOP step just carried out")
    observed: str = dspy.InputField(desc="what the step found: its verdict and observed data")
    context: str = dspy.InputField(desc="the run's input: the dialogue or alarm being handled")
    branches: str = dspy.InputField(desc="the next branches, numbered, each with its condition")
    chosen: list[int] = dspy.OutputField(
        desc="the numbers of the branches whose condition holds; an empty list if none holds"
    )


class JudgeCondition(dspy.Signature):
    """Decide whether a condition of a standard operating procedure holds in the context given
    (typically the state of a dialogue with a customer). Judge only from the context: do not
    assume facts it does not state."""

    condition: str = dspy.InputField(desc="the condition, in natural language")
    context: str = dspy.InputField(desc="the run's input: the dialogue or alarm being handled")
    # the rationale first: a small model decides better after it has said what it read
    rationale: str = dspy.OutputField(desc="one sentence: what in the context decides it")
    holds: bool = dspy.OutputField(desc="true if the condition holds in this context")
