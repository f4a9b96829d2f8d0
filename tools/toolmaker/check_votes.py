"""The fallback's samples and their votes: each sampled Check, the verdict it gave on the input
(or why it gave none), and the verdict the most of them give.

A tie is not a verdict. The fallback then draws as many samples again, once (the
self-consistency of Wang et al. with an adaptive budget, as in Aggarwal et al.'s
adaptive-consistency: more samples only where the first ones disagree), and a tie after that
leaves the node unresolved with the votes: no guess.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Candidate:
    """One sample: its Check (None: the reply was unusable), and what the Check gave."""

    index: int
    spec: dict[str, Any] | None
    problem: str | None = None
    verdict: str | None = None
    observed: Any = None
    same_as: int | None = None  # the earlier sample that gave the same Check
    repaired: str | None = None  # why the validator rejected the first draw, sent back once
    settled: str | None = None  # the scale the units set and the operator the text states

    def row(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass
class Tally:
    """The samples' votes and the verdict they reach (None: a tie or no vote)."""

    candidates: list[Candidate] = field(default_factory=list)
    ran: dict[str, int] = field(default_factory=dict)  # a Check's JSON -> the sample that ran it

    def votes(self) -> dict[str, int]:
        return dict(Counter(c.verdict for c in self.candidates if c.verdict is not None))

    def tied(self) -> bool:
        """Whether two or more verdicts have the most votes."""
        votes = self.votes()
        return bool(votes) and list(votes.values()).count(max(votes.values())) > 1

    def winner(self) -> tuple[str | None, str | None]:
        """(verdict, None), or (None, why there is none)."""
        votes = self.votes()
        if not votes:
            problems = [c.problem for c in self.candidates if c.problem]
            first = f", e.g. {problems[0]}" if problems else ""
            return None, f"none of {len(self.candidates)} sampled Checks ran{first}"
        if self.tied():
            return None, f"the sampled Checks disagree: {said(votes)}; no verdict taken"
        return max(votes, key=lambda v: votes[v]), None

    def kept(self, verdict: str) -> Candidate:
        """The Check that gave ``verdict`` in the most samples (ties: the earliest)."""
        weight = Counter(c.same_as if c.same_as is not None else c.index for c in self.candidates)
        firsts = [c for c in self.candidates if c.same_as is None and c.verdict == verdict]
        return max(firsts, key=lambda c: (weight[c.index], -c.index))


def said(votes: dict[str, int]) -> str:
    return ", ".join(f"{n} {v}" for v, n in sorted(votes.items()))
