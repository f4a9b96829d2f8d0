"""The mistakes an SOP file can hold: one ``Problem`` per mistake, raised together as ``SopError``.

A problem prints as ``error: <file>:<line>: <node id>: <what is wrong and how to fix it>``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One mistake in an SOP file."""

    file: str
    line: int
    node: str
    message: str

    def __str__(self) -> str:
        return f"error: {self.file}:{self.line}: {self.node or '-'}: {self.message}"


# The most problems an SopError's message shows (and ``sopgraph validate`` prints), the first
# in file order; one more line says how many are left. ``SopError.problems`` keeps them all.
# A broken SOP once printed 3,802 lines: the first mistakes usually cause the rest.
MAX_SHOWN_PROBLEMS = 20


def shown_problems(problems: list[Problem]) -> list[str]:
    """The lines that report ``problems``: at most MAX_SHOWN_PROBLEMS of them, then one line
    ``error: <file>: ... and N more problems (M in all); fix these first``."""
    lines = [str(p) for p in problems[:MAX_SHOWN_PROBLEMS]]
    more = len(problems) - MAX_SHOWN_PROBLEMS
    if more > 0:
        lines.append(
            f"error: {problems[MAX_SHOWN_PROBLEMS].file}: ... and {more:,} more "
            f"problem{'s' if more > 1 else ''} ({len(problems):,} in all); fix these first, "
            "then validate again"
        )
    return lines


class SopError(Exception):
    """An SOP file the user must fix; ``str()`` is one ``error:`` line per problem, the first
    MAX_SHOWN_PROBLEMS and a count of the rest (``problems`` holds every one)."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(shown_problems(problems)))
