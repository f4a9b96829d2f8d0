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


class SopError(Exception):
    """An SOP file the user must fix; ``str()`` is one ``error:`` line per problem."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))
