"""The CLI's exit code for each run status (README, `sopgraph --help`)."""

from __future__ import annotations

# 2 is a mistake in the input, 130 an interrupt: neither is a run status.
EXIT_CODES: dict[str, int] = {
    "done": 0,
    "interrupted": 0,
    "unresolved": 1,
    "unmatched": 3,
    "bounded": 4,
    "refused": 5,
}


def exit_code(status: str) -> int:
    """The exit code of a run that ended with ``status``."""
    return EXIT_CODES[status]
