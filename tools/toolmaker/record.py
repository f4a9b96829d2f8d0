"""What the tool-making pipeline reads and leaves behind: cases, traces, rounds, the make record.

Every candidate, trace, diagnosis and decision of one make is kept in a ``MakeRecord``, saved
as JSON beside the tool version it produced, so a reviewer can see why the tool is what it is.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Value = Literal["true", "false", "no_data"]
Config = Literal["sop", "sop+d", "sop+r", "sop+d+r"]
CONFIGS: tuple[str, ...] = Config.__args__  # type: ignore[attr-defined]


class Case(BaseModel):
    """One input of a node; ``expected`` is None for an unlabeled case (label-free variant)."""

    site: str
    timestamp: str
    input: dict[str, Any] = Field(default_factory=dict)
    expected: Value | None = None

    def key(self) -> str:
        return f"{self.site}@{self.timestamp}:{self.input.get('station') or ''}"

    @property
    def run_input(self) -> dict[str, Any]:
        """The input a tool gets for this case (``run(input, ctx)``): the case's input with its
        site and time, as a run's validated input carries them."""
        return {**self.input, "site": self.site, "timestamp": self.timestamp}


class McpExchange(BaseModel):
    """One MCP call a trace or a candidate made, with a preview of what came back."""

    server: str | None = None
    tool: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    error: str | None = None


class FieldSummary(BaseModel):
    """A field seen in MCP results: its type, range and how often it was null."""

    source: str  # server.tool
    name: str
    dtype: str
    count: int = 0
    nulls: int = 0
    min: Any = None
    max: Any = None
    examples: list[Any] = Field(default_factory=list)


class Trace(BaseModel):
    """The data collector's run on one case: its code, MCP exchanges, schema and graded verdict."""

    case: Case
    verdict: Value | None = None
    correct: bool | None = None  # None when the case is unlabeled
    code: list[str] = Field(default_factory=list)
    exchanges: list[McpExchange] = Field(default_factory=list)
    schema_: list[FieldSummary] = Field(default_factory=list, alias="schema")
    answer: str | None = None
    error: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    judged: bool | None = None  # label-free: the trace judge kept it
    judge_reason: str | None = None

    model_config = {"populate_by_name": True}


class CaseResult(BaseModel):
    """A candidate's output on one case."""

    case: Case
    value: Value | None = None
    observed: Any = None
    threshold: Any = None
    error: str | None = None
    exchanges: list[McpExchange] = Field(default_factory=list)

    @property
    def correct(self) -> bool:
        return self.case.expected is not None and self.value == self.case.expected


class Validation(BaseModel):
    """A candidate run against cases inside the sandbox."""

    ok: bool  # the sandbox ran it to the end (False: refused, killed, or does not compile)
    reason: str | None = None  # the sandbox's (or the compiler's) reason when not ok
    results: list[CaseResult] = Field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> int:
        return sum(r.correct for r in self.results)

    @property
    def rate(self) -> float:
        return self.passed / len(self.results) if self.results else 0.0

    @property
    def failures(self) -> list[CaseResult]:
        return [r for r in self.results if not r.correct]


class Candidate(BaseModel):
    """One tool the tool-maker wrote: the source, and the spec it compiled from (spec form)."""

    code: str
    spec: dict[str, Any] | None = None
    problem: str | None = None  # the spec did not compile: why (the code is then empty)


class Round(BaseModel):
    """One round of the test-repair loop (label-free: one candidate's state in one round)."""

    round: int
    candidate_index: int | None = None  # label-free: which of the N candidates
    pass_round: int | None = None  # label-free: which repair round it belongs to
    carried: bool | None = None  # label-free: agreed and passed review, so not rewritten
    review: str | None = None  # label-free: the code-review judge's answer
    candidate: Candidate
    train_pass: float = 0.0
    passed: int = 0
    cases: int = 0
    sandbox_reason: str | None = None
    failures: list[CaseResult] = Field(default_factory=list)  # the first few, as shown
    diagnosis: str | None = None  # the reflector's, written after this round's test
    samples: list[Sample] = Field(default_factory=list)  # spec pipeline: the N candidates
    search: list[str] = Field(default_factory=list)  # spec pipeline: the search's steps
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
    form: Literal["spec", "code"] = "spec"
    label_free: bool = False
    train_cases: int = 0
    discovery: str = ""  # the servers' schema read by their listing tools (+d configs)
    traces: list[Trace] = Field(default_factory=list)
    rounds: list[Round] = Field(default_factory=list)
    best_round: int | None = None
    train_pass: float = 0.0
    eval_pass: float | None = None  # filled by the evaluation, never shown to the model
    eval_cases: int | None = None
    demonstrations: list[str] = Field(default_factory=list)  # spec pipeline: "node (score)"
    samples: int | None = None  # spec pipeline: candidates per round
    program: str | None = None  # spec pipeline: the optimized program loaded (None: zero-shot)
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    stages: dict[str, float] = Field(default_factory=dict)  # seconds per stage
    pseudo_labels: list[dict[str, Any]] = Field(default_factory=list)  # label-free, per round
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
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0


Round.model_rebuild()
