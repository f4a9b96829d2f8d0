"""The label-free variant (the paper's appendix C): votes and judges instead of labels.

K sub-agents each investigate one unlabeled case; a trace judge drops traces inconsistent with
the SOP; N candidates are written from the surviving traces and run on the K cases; each case
gets a pseudo-label by majority vote over the surviving traces' verdicts and the candidates'
outputs. For R rounds, a candidate that agrees with every pseudo-label and passes a code-review
judge is carried forward; the others get their disagreements as failures, a diagnosis, and a
rewrite; then the pseudo-labels are recounted. The pick: most agreement with the pseudo-labels,
ties to the review judge, then to the shorter code.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

import dspy

from sopgraph.prompts.toolmaker import CodeReviewModule, TraceJudgeModule, says_yes
from sopgraph.tools.toolmaker.collector import balanced_sample, collect
from sopgraph.tools.toolmaker.context import (
    check_text,
    render_evidence,
    render_failures,
    render_trace,
)
from sopgraph.tools.toolmaker.discovery import discover
from sopgraph.tools.toolmaker.maker import Usage, call_failure, shown, tracked
from sopgraph.tools.toolmaker.pipeline import MakeDeps, MakeError, Stage, _noop
from sopgraph.tools.toolmaker.record import Candidate, Case, CaseResult, MakeRecord, Round, Trace


@dataclass
class Judges:
    """The trace judge and the code-review judge (same LM as the tool-maker unless given)."""

    lm: dspy.BaseLM | None = None
    trace: TraceJudgeModule = field(default_factory=TraceJudgeModule)
    review: CodeReviewModule = field(default_factory=CodeReviewModule)


def majority(votes: list[str | None], prefer: str | None = None) -> str | None:
    """The most common vote (None ignored); a tie goes to ``prefer`` if tied, else the first."""
    counts = Counter(v for v in votes if v is not None)
    if not counts:
        return None
    top = max(counts.values())
    tied = [v for v, c in counts.items() if c == top]
    return prefer if prefer in tied else sorted(tied)[0]


def pick(scores: list[tuple[int, bool, int]]) -> int:
    """Index of the best (agreement, review passed, -code length) candidate."""
    return max(range(len(scores)), key=lambda i: (scores[i][0], scores[i][1], -scores[i][2], -i))


async def make_label_free(
    deps: MakeDeps,
    unlabeled: list[Case],
    judges: Judges,
    *,
    k: int = 3,
    n: int = 3,
    rounds: int = 2,
    seed: int = 0,
    on_stage: Stage = _noop,
) -> MakeRecord:
    """Make a tool without labels. Any label on ``unlabeled`` is dropped before use."""
    if deps.collector is None:
        raise MakeError("the label-free variant needs the data-collector sub-agent: set a model")
    start = time.perf_counter()
    cases = [c.model_copy(update={"expected": None}) for c in unlabeled]
    picked = balanced_sample(cases, k, seed)
    if not picked:
        raise MakeError(f"{deps.node.id}: no cases to investigate")
    record = MakeRecord(
        node=deps.node.id, config="sop+d+r", seed=seed, model=deps.model,
        form=deps.maker.form, label_free=True, train_cases=len(picked),  # type: ignore[arg-type]
    )  # fmt: skip
    record.traces = await collect(
        deps.sop, deps.node, picked, deps.collector, deps.catalog.pool, deps.params_for,
        on_case=lambda i, m: on_stage("collect", f"case {i + 1}/{m}"),
    )  # fmt: skip
    for t in record.traces:
        record.input_tokens += t.input_tokens
        record.output_tokens += t.output_tokens
    on_stage("judge", f"{len(record.traces)} traces")
    for t in record.traces:
        t.judged, t.judge_reason, usage = await _ask(
            judges.trace, judges.lm, check=check_text(deps.brief),
            parameters=deps.brief.parameters, trace=render_trace(t, graded=False),
        )  # fmt: skip
        record.input_tokens += usage.input_tokens
        record.output_tokens += usage.output_tokens
    surviving = [t for t in record.traces if t.judged]
    record.discovery = await discover(deps.catalog, deps.brief.server_names)
    evidence = render_evidence(record.discovery, surviving, graded=False)
    trace_votes = {t.case.key(): t.verdict for t in surviving}

    # N independent candidates, each run on the K investigated cases.
    candidates: list[Candidate] = []
    outputs: list[list[CaseResult]] = []
    for i in range(n):
        on_stage("write", f"candidate {i + 1}/{n}")
        cand, usage = await deps.maker.write(deps.brief, deps.catalog, evidence, "none", i)
        record.input_tokens += usage.input_tokens
        record.output_tokens += usage.output_tokens
        candidates.append(cand)
        outputs.append(await _outputs(deps, cand, picked))
    pseudo = _pseudo_labels(picked, outputs, trace_votes)
    record.pseudo_labels.append(pseudo)
    reviews: list[bool] = [False] * n
    for r in range(rounds):
        for i in range(n):
            disagree = _disagreements(picked, outputs[i], pseudo)
            passed, reason, usage = await _ask(
                judges.review, judges.lm, check=check_text(deps.brief),
                candidate=shown(candidates[i]),
            )  # fmt: skip
            record.input_tokens += usage.input_tokens
            record.output_tokens += usage.output_tokens
            reviews[i] = passed and not candidates[i].problem
            carried = not disagree and reviews[i]
            record.rounds.append(
                _round(len(record.rounds), i, r, candidates[i], outputs[i], pseudo, carried, reason)
            )  # fmt: skip
            if carried:
                continue
            on_stage("repair", f"round {r + 1}: candidate {i + 1}/{n}")
            failures = (
                render_failures(disagree)
                if disagree
                else f"the code review found it inconsistent with the SOP: {reason}"
            )
            diagnosis, usage = await deps.reflector.diagnose(
                deps.brief, evidence, shown(candidates[i]), failures
            )
            record.input_tokens += usage.input_tokens
            record.output_tokens += usage.output_tokens
            feedback = f"previous candidate:\n{shown(candidates[i])}\n\nfailing cases:\n{failures}"
            feedback += f"\n\ndiagnosis:\n{diagnosis}"
            cand, usage = await deps.maker.write(deps.brief, deps.catalog, evidence, feedback, i)
            record.input_tokens += usage.input_tokens
            record.output_tokens += usage.output_tokens
            candidates[i] = cand
            outputs[i] = await _outputs(deps, cand, picked)
        pseudo = _pseudo_labels(picked, outputs, trace_votes)
        record.pseudo_labels.append(pseudo)
    # Final state of every candidate, then the pick.
    scores = []
    for i in range(n):
        agree = sum(
            1 for res in outputs[i] if res.value is not None and res.value == pseudo[res.case.key()]
        )
        scores.append((agree, reviews[i], len(candidates[i].code) or 1 << 30))
        record.rounds.append(
            _round(len(record.rounds), i, rounds, candidates[i], outputs[i], pseudo, None, None)
        )
    chosen = pick(scores)
    final = [r for r in record.rounds if r.pass_round == rounds]
    record.best_round = final[chosen].round
    record.train_pass = final[chosen].train_pass
    record.notes.append(
        f"pick: candidate {chosen + 1} (agreement, review, length) = {scores[chosen]}; "
        f"all: {scores}"
    )
    record.seconds = round(time.perf_counter() - start, 2)
    on_stage("done", f"picked candidate {chosen + 1}")
    return record


async def _ask(
    module: dspy.Module, lm: dspy.BaseLM | None, **inputs: str
) -> tuple[bool, str, Usage]:
    """A judge's yes/no and reason; a call that fails counts as `no`, with the failure as reason."""
    try:
        pred, usage = await tracked(module.acall(**inputs), lm)
    except Exception as exc:  # noqa: BLE001 - a judge that cannot answer does not approve
        return False, f"(no answer: {call_failure(exc)})", Usage()
    return says_yes(pred.consistent), str(pred.reason or "")[:300], usage


async def _outputs(deps: MakeDeps, cand: Candidate, cases: list[Case]) -> list[CaseResult]:
    if cand.problem:
        return [CaseResult(case=c, error=cand.problem) for c in cases]
    return (await deps.validate(cand.code, cases)).results


def _pseudo_labels(
    cases: list[Case], outputs: list[list[CaseResult]], trace_votes: dict[str, str | None]
) -> dict[str, str | None]:
    labels = {}
    for j, case in enumerate(cases):
        key = case.key()
        votes = [out[j].value for out in outputs]
        if key in trace_votes:
            votes.append(trace_votes[key])
        labels[key] = majority(votes, prefer=trace_votes.get(key))
    return labels


def _disagreements(
    cases: list[Case], results: list[CaseResult], pseudo: dict[str, str | None]
) -> list[CaseResult]:
    """Cases where the candidate differs from the pseudo-label, shown as labeled failures."""
    out = []
    for case, res in zip(cases, results, strict=True):
        label = pseudo[case.key()]
        if label is not None and res.value != label:
            out.append(res.model_copy(update={"case": case.model_copy(update={"expected": label})}))
    return out


def _round(
    number: int, index: int, r: int, cand: Candidate, results: list[CaseResult],
    pseudo: dict[str, str | None], carried: bool | None, review: str | None,
) -> Round:  # fmt: skip
    agree = sum(
        1 for res in results if res.value is not None and res.value == pseudo[res.case.key()]
    )
    return Round(
        round=number, candidate_index=index, pass_round=r, carried=carried, review=review,
        candidate=cand, passed=agree, cases=len(results),
        train_pass=round(agree / len(results), 4) if results else 0.0,
    )  # fmt: skip


__all__ = ["Judges", "Trace", "make_label_free", "majority", "pick"]
