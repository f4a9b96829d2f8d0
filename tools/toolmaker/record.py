"""What the tool-maker reads and leaves behind: cases, samples, rounds, the make record.

Every sample, its score, the search's steps and the diagnosis of one make are kept in a
``MakeRecord``, saved as JSON beside the tool version it produced, so a reviewer can see why
the tool is what it is.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field

Value = Literal["true", "false", "no_data"]
Config = Literal["sop", "sop+d", "sop+r", "sop+d+r"]
CONFIGS: tuple[str, ...] = Config.__args__  # type: ignore[attr-defined]


class Case(BaseModel):
    """One input of a node; ``expected`` is None for an unlabeled case (a label-free make)."""

    site: str
    timestamp: str
    input: dict[str, Any] = Field(default_factory=dict)
    expected: Value | None = None

    def key(self) -> str:
        """The case's identity: its whole run input."""
        return json.dumps(self.run_input, sort_keys=True, default=str)

    @property
    def run_input(self) -> dict[str, Any]:
        """The input a tool gets for this case (``run(input, ctx)``): the case's input with its
        site and time, as a run's validated input carries them."""
        return {**self.input, "site": self.site, "timestamp": self.timestamp}


class CaseResult(BaseModel):
    """A candidate's output on one case."""

    case: Case
    value: Value | None = None
    observed: Any = None
    threshold: Any = None
    error: str | None = None

    @property
    def correct(self) -> bool:
        return self.case.expected is not None and self.value == self.case.expected


class Candidate(BaseModel):
    """One tool the tool-maker made: the tool file, and the spec it holds."""

    code: str
    spec: dict[str, Any] | None = None
    problem: str | None = None  # no spec ran: why (the code is then empty)


class Round(BaseModel):
    """One round: the N samples, the kept spec and its score, the search's steps, the diagnosis."""

    round: int
    candidate: Candidate
    train_pass: float = 0.0
    passed: int = 0
    cases: int = 0
    failures: list[CaseResult] = Field(default_factory=list)  # the first few, as shown
    diagnosis: str | None = None  # the reflector's, written after this round's test
    samples: list[Sample] = Field(default_factory=list)  # the N candidates
    search: list[str] = Field(default_factory=list)  # the search's steps
    # who made the round's kept spec: a model sample, the conventions search, or (opt-in) the
    # LLM-free enumeration's candidates added to round 0
    found_by: Literal["model", "search", "enumeration"] | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0


class MakeRecord(BaseModel):
    """One make of one node's tool: inputs seen, every round, the pick and its cost."""

    node: str
    config: Config
    seed: int
    model: str
    form: Literal["spec"] = "spec"
    label_free: bool = False  # the training labels were not read: round 0's votes labelled them
    train_cases: int = 0
    discovery: str = ""  # the servers' data description (+d configs)
    rounds: list[Round] = Field(default_factory=list)
    best_round: int | None = None
    train_pass: float = 0.0
    eval_pass: float | None = None  # filled by the evaluation, never shown to the model
    eval_cases: int | None = None
    demonstrations: list[str] = Field(default_factory=list)  # "node (score)"
    samples: int | None = None  # candidates per round
    program: str | None = None  # the optimized program loaded (None: zero-shot)
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    stages: dict[str, float] = Field(default_factory=dict)  # seconds per stage
    notes: list[str] = Field(default_factory=list)

    @property
    def best(self) -> Round | None:
        return next((r for r in self.rounds if r.round == self.best_round), None)

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class Sample(BaseModel):
    """One of a round's N sampled specs and what execution on the training cases made of it."""

    index: int
    spec: dict[str, Any] | None = None
    passed: int = 0
    cases: int = 0
    problem: str | None = None  # unparsable, rejected by validation, or raised on every case
    duplicate_of: int | None = None  # the same spec as an earlier sample (not run again)
    settled: str | None = None  # label-free: the test value the node's branches state, set
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0


Round.model_rebuild()
