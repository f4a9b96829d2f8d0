"""Calls to the tool-maker's models: the tokens a call spent, one line for a call that failed.

The spec pipeline (``sampling``) and the reflector make their DSPy calls through these, so
every make record counts its tokens the same way.
"""

from __future__ import annotations

from collections.abc import Awaitable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, TypeVar

import dspy

T = TypeVar("T")


@dataclass
class Usage:
    """Tokens a stage spent."""

    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens


async def tracked(call: Awaitable[T], lm: dspy.BaseLM | None = None) -> tuple[T, Usage]:
    """Await a DSPy call under ``lm`` and return its result with the tokens it used."""
    with dspy.context(lm=lm) if lm is not None else nullcontext(), dspy.track_usage() as usage:
        result = await call
    return result, usage_of(usage)


def usage_of(tracker: Any) -> Usage:
    """The tokens a ``dspy.track_usage()`` tracker counted, summed over its models."""
    spent = Usage()
    for entry in tracker.get_total_tokens().values():
        spent.input_tokens += int(entry.get("prompt_tokens") or 0)
        spent.output_tokens += int(entry.get("completion_tokens") or 0)
    return spent


def call_failure(exc: BaseException) -> str:
    """One line for a model call that gave nothing usable (unparsable reply, timeout)."""
    first = next((ln for ln in str(exc).splitlines() if ln.strip()), "")
    return f"{type(exc).__name__}: {first[:300]}"
