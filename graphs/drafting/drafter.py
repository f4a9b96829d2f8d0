"""Drafting an SOP from a document in small steps: a section a step, several drafts sampled and
the one with the fewest failed checks kept, its failed checks sent back for repair (bounded).

The model step is a function given to ``draft`` (``prompts/drafting.py`` has the DSPy one); it
gets a ``StepRequest`` and returns the answer mapping, so tests drive the loop with fakes.

Example:
    >>> result = await draft(doc, propose, samples=3, repairs=1)  # doctest: +SKIP
    >>> result.problems
    []
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from sopgraph.graphs.drafting.checks import check_draft
from sopgraph.graphs.drafting.document import Document, Sentence
from sopgraph.graphs.drafting.facts import DraftFacts
from sopgraph.graphs.drafting.outcomes import find_outcomes
from sopgraph.graphs.drafting.steps import (
    CatalogEntry,
    Plan,
    assemble,
    clean_answer,
    outcome_id,
    to_yaml,
)
from sopgraph.graphs.drafting.structural import structural_answers
from sopgraph.graphs.problems import Problem

SOP_FILE = "sop.yaml"
MAX_SAMPLES = 8
MAX_REPAIRS = 3
STRUCTURAL = "structural"


@dataclass(frozen=True)
class StepRequest:
    """What one model step sees: the section's sentences, where they may lead, the outcomes,
    the catalog, feedback from failed checks (``none`` at first) and the reply schema."""

    section: str
    sentences: str
    targets: str
    outcomes: str
    catalog: str
    feedback: str
    response_format: dict[str, Any]
    sample: int


@dataclass
class StepReply:
    answer: Any  # the reply's mapping, or None when the step failed
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str = ""


Propose = Callable[[StepRequest], Awaitable[StepReply]]


@dataclass
class Cost:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failed_calls: int = 0
    seconds: float = 0.0

    def add(self, reply: StepReply) -> None:
        self.calls += 1
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens
        self.failed_calls += reply.answer is None

    def line(self) -> str:
        return (
            f"{self.calls} model calls ({self.failed_calls} failed), "
            f"{self.prompt_tokens:,} prompt + {self.completion_tokens:,} completion tokens, "
            f"{self.seconds:.0f} s"
        )


@dataclass
class Draft:
    text: str
    unused: list[int]
    problems: list[Problem]
    answers: dict[int, dict[str, str]]


@dataclass
class DraftResult:
    draft: Draft
    facts: DraftFacts
    plan: Plan
    cost: Cost
    sample_problems: list[int] = field(default_factory=list)  # failed checks of each sample
    repairs: int = 0
    structural_problems: int = -1  # the candidate made without the model's; -1: left out
    chosen: str = STRUCTURAL  # which candidate was kept: "sample K" (from 1) or "structural"
    cut: str = ""  # what the time budget left out, if anything

    def choice_line(self) -> str:
        line = (
            f"samples {self.sample_problems}, structural {self.structural_problems}, "
            f"chosen {self.chosen}"
        )
        return f"{line} ({self.cut})" if self.cut else line


def _build(
    plan: Plan, answers: dict[int, dict[str, str]], base: DraftFacts, sop_id: str | None
) -> Draft:
    sop, unused = assemble(plan, answers, sop_id)
    text = to_yaml(sop)
    facts = base.model_copy(update={"unused": unused})
    return Draft(text, unused, check_draft(text, SOP_FILE, facts), answers)


def _request(plan: Plan, section: list[Sentence], feedback: str, sample: int) -> StepRequest:
    outcomes = "\n".join(f"{outcome_id(o)}: {o.field} {o.value}" for o in plan.outcomes)
    return StepRequest(
        section=section[0].section or plan.doc.title,
        sentences=plan.render_section(section),
        targets=plan.render_targets(),
        outcomes=outcomes or "none stated",
        catalog="\n".join(plan.catalog) if plan.catalog else "none",
        feedback=feedback,
        response_format=plan.schema(section),
        sample=sample,
    )


def _feedback(draft: Draft, plan: Plan, section: list[Sentence]) -> str:
    """The failed checks that concern ``section``: its nodes' problems and the document-wide ones."""
    ids = {plan.ids[s.number] for s in section}
    numbers = {f"(s{s.number})" for s in section}
    mine = [
        p for p in draft.problems
        if p.node in ids or not p.node and (any(n in p.message for n in numbers) or "outcome" in p.message)
    ]  # fmt: skip
    if not mine:
        return ""
    earlier = {f"s{n}": a for n, a in draft.answers.items() if n in {s.number for s in section}}
    return (
        "Your earlier answer: "
        + str(earlier)
        + "\nIts failed checks:\n"
        + "\n".join(f"- {p.node or 'document'}: {p.message}" for p in mine[:8])
    )


async def draft(
    doc: Document,
    propose: Propose,
    *,
    catalog: list[str] | None = None,
    about: dict[str, CatalogEntry] | None = None,
    samples: int = 3,
    repairs: int = 1,
    sop_id: str | None = None,
    sha256: str = "",
    structural: bool = True,
    on_step: Callable[[str], None] | None = None,
    budget_s: float | None = None,
) -> DraftResult:
    """Draft ``doc``: ``samples`` drafts of every section and one made without the model
    (``structural.py``), the one with the fewest failed checks kept, then up to ``repairs``
    rounds that send each section its failed checks. On a tie the earliest model sample is
    kept: the structural candidate wins only when it fails fewer checks. ``samples=0`` drafts
    the structural candidate alone.

    ``about`` says what each catalog name is about (a tool's description and record fields,
    read by the structural candidate's data hints) and the arguments it requires (the draft's
    input). ``structural=False`` leaves the structural
    candidate out (the model's drafts alone).
    ``on_step`` is called after every model step with a short description (a progress bar).
    ``budget_s``: no sample or repair round starts that would, at the pace of the samples
    before it, end past this many seconds from the start (the first sample always runs); what
    it left out is said in ``cut``.
    """
    samples = max(0, min(samples, MAX_SAMPLES))
    repairs = max(0, min(repairs, MAX_REPAIRS))
    started = time.monotonic()
    outcomes = find_outcomes(doc)
    plan = Plan.of(doc, outcomes, catalog, about)
    base = DraftFacts.of(doc, outcomes, catalog, sha256)
    cost = Cost()

    async def step(
        section: list[Sentence], feedback: str, sample: int
    ) -> dict[int, dict[str, str]]:
        reply = await propose(_request(plan, section, feedback or "none", sample))
        cost.add(reply)
        if on_step is not None:
            on_step(f"section '{section[0].section or doc.title}', sample {sample + 1}")
        return clean_answer(reply.answer or {}, section, plan)

    def over(done: int) -> bool:  # the next round would end past the budget
        spent = time.monotonic() - started
        return budget_s is not None and done > 0 and spent + spent / done > budget_s

    budgeted = False  # a round the budget did not start
    drafts: list[Draft] = []
    for k in range(samples):
        if over(k):
            budgeted = True
            break
        answers: dict[int, dict[str, str]] = {}
        for section in plan.sections:
            answers.update(await step(section, "", k))
        drafts.append(_build(plan, answers, base, sop_id))
    made = (
        _build(plan, structural_answers(plan), base, sop_id) if structural or not drafts else None
    )
    candidates = [*drafts, *([made] if made else [])]  # the model's samples first: they win a tie
    k = min(range(len(candidates)), key=lambda i: len(candidates[i].problems))
    best = candidates[k]
    chosen = STRUCTURAL if k == len(drafts) else f"sample {k + 1}"
    done = 0
    for _ in range(repairs):
        if not best.problems:
            break
        if over(len(drafts) + done):
            budgeted = True
            break
        done += 1
        answers = dict(best.answers)
        for section in plan.sections:
            feedback = _feedback(best, plan, section)
            if feedback:
                answers.update(await step(section, feedback, samples))
        repaired = _build(plan, answers, base, sop_id)
        if len(repaired.problems) < len(best.problems):
            best = repaired
            chosen = f"{chosen.split(' repaired')[0]} repaired"
    cost.seconds = time.monotonic() - started
    tally = {f"sample {i + 1}": len(d.problems) for i, d in enumerate(drafts)}
    if made is not None:
        tally[STRUCTURAL] = len(made.problems)
    facts = base.model_copy(update={"unused": best.unused, "chosen": chosen, "candidates": tally})
    cut = ""
    if budgeted:
        cut = (f"the {budget_s:.0f} s budget: {len(drafts)} of {samples} samples, {done} of "
               f"{repairs} repair rounds")  # fmt: skip
    return DraftResult(best, facts, plan, cost, [len(d.problems) for d in drafts], done,
                       len(made.problems) if made else -1, chosen, cut)  # fmt: skip


def total_steps(doc: Document, samples: int, repairs: int) -> int:
    """The most model steps ``draft`` makes (for a progress bar's total)."""
    sections = len(Plan.of(doc, find_outcomes(doc)).sections)
    return sections * (max(0, min(samples, MAX_SAMPLES)) + max(0, min(repairs, MAX_REPAIRS)))
