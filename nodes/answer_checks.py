"""The CodeAct sub-agent's answer checks: named predicates an answer must pass to be taken.

As smolagents' ``final_answer_checks``: each check gets the answer (the typed answer, or None
for a free-text one) and the loop's state, and returns a problem (one sentence, said to the
model) or None. The loop sends an answer a check refuses back with the check's name; on the
last reply it ends without a verdict, naming the check. Each holds for any SOP: they ask only
that the answer come from what the code read and printed, never what a world's data means.

Example:
    >>> state = {"code": [{"stdout": "31.2\\n"}]}
    >>> observed_was_printed(TypedAnswer(verdict="true", observed=31.2), state) is None
    True
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from sopgraph.prompts.codeact import TypedAnswer

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE]-?\d+)?")

AnswerCheck = Callable[[TypedAnswer | None, Mapping[str, Any]], str | None]


def looked_before_answering(answer: TypedAnswer | None, state: Mapping[str, Any]) -> str | None:
    """An answer needs a function called first (its call may fail: the data is then missing);
    one given before any call is a guess."""
    if state.get("mcp_calls"):
        return None
    return "you have not read any data yet: call one of the functions and print what it returns"


def observed_was_printed(answer: TypedAnswer | None, state: Mapping[str, Any]) -> str | None:
    """The value answered is a number the code printed (equal, or equal to 2 decimals)."""
    if answer is None or answer.observed is None:
        return None
    printed = "\n".join(step.get("stdout") or "" for step in state.get("code", []))
    for token in _NUMBER.findall(printed):
        number = float(token)
        if number == answer.observed or round(number, 2) == round(answer.observed, 2):
            return None
    return f"observed {answer.observed:g} is not a number your code printed: print it"


ANSWER_CHECKS: tuple[tuple[str, AnswerCheck], ...] = (
    ("looked_before_answering", looked_before_answering),
    ("observed_was_printed", observed_was_printed),
)
