"""The spec pipeline: many candidates from one prompt, chosen by execution, repaired by diagnosis.

For one node: the model fills the node's spec under a grammar built from the catalog
(``grammar.spec_model``) with the ``k`` most similar verified specs of the library as
demonstrations (``demos``). Each round samples ``samples`` candidates from one prompt (the
first greedy, the rest at temperature; llama.cpp reuses the prompt's KV cache, so only the
first pays for reading it), runs each distinct one on the training cases on the host, and keeps
the best (ties: the shorter spec). With repair (``+r``) the host then walks the candidate's
conventions (``search.improve``) and, short of a full pass, the reflector reads the kept
candidate's failing cases with what it measured; its diagnosis and those cases are the next
round's feedback. ``+d`` adds the servers' data description (units, meanings, sample rows).
Every sample, its score, the search's steps and the diagnosis are kept in the make record.

Label-free (``label_free``, the paper's appendix C by votes alone): the training cases come
without labels; round 0's model samples vote on each (a distinct spec weighs as many samples
as gave it), the majority verdict becomes the case's pseudo-label, and everything after is the
same, against the pseudo-labels: choice, convention search, diagnosis. Votes cannot say which
declared value of a record field makes the verdict true (samples that all test the wrong one
agree), so each sample's test takes the value the node's branches state
(``check_polarity.stated_test``, kept in the sample's ``settled``), as the fallback's do.

Example:
    >>> record = await make_spec_tool(deps, train, config="sop+d+r", samples=8)  # doctest: +SKIP
    >>> record.train_pass, record.best.found_by                                    # doctest: +SKIP
    (1.0, 'model')
"""

from __future__ import annotations

import json
import pprint
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dspy

from sopgraph.graphs.model import Node, Sop
from sopgraph.prompts.adapter import dspy_context_with
from sopgraph.prompts.toolmaker import CheckMakerModule
from sopgraph.tools.toolmaker.check_polarity import stated_test
from sopgraph.tools.toolmaker.context import NodeBrief, check_text
from sopgraph.tools.toolmaker.data_catalog import DataCatalog
from sopgraph.tools.toolmaker.demos import Demo, canonical, render
from sopgraph.tools.toolmaker.docstring import docstring
from sopgraph.tools.toolmaker.execution import Score, SpecRunner, failures_text
from sopgraph.tools.toolmaker.grammar import as_spec_dict, response_format, spec_model
from sopgraph.tools.toolmaker.maker import call_failure, usage_of
from sopgraph.tools.toolmaker.record import Candidate, Case, MakeRecord, Round, Sample
from sopgraph.tools.toolmaker.reflector import Reflector
from sopgraph.tools.toolmaker.search import enumerate_specs, improve, size

SAMPLES = 8
ROUNDS = 1  # repair rounds after the first (each samples again around the diagnosis)
TEMPERATURE = 0.8
SEARCH_TOP = 3  # distinct candidates whose conventions the +r search walks
Stage = Callable[[str, str], None]


@dataclass
class SpecDeps:
    """What one node's spec make runs with."""

    sop: Sop
    node: Node
    brief: NodeBrief
    data: DataCatalog
    runner: SpecRunner
    demos: list[Demo] = field(default_factory=list)
    input_fields: list[str] = field(default_factory=lambda: ["site", "station", "timestamp"])
    lm: dspy.BaseLM | None = None
    reflector: Reflector | None = None
    model: str = "model"
    program: str | Path | None = "default"  # the tool-maker's saved program (None: zero-shot)


def _noop(stage: str, detail: str) -> None:
    pass


def params_of(brief: NodeBrief, text: str) -> list[str]:
    """The parameters a threshold may name: those in the node's text, else every one."""
    named = [p for p in brief.param_names if "{" + p + "}" in text]
    return named or brief.param_names


def inputs(deps: SpecDeps, config: str, feedback: str) -> dict[str, str]:
    """Every text the model receives (the prompt-hygiene test reads these)."""
    hints = ", ".join(deps.brief.data_hints) or "none"
    names = []
    for server, metrics in deps.data.metrics.items():
        names.append(f"{server} metrics: {', '.join(metrics)}")
    for server, tables in deps.data.tables.items():
        for table, cols in tables.items():
            names.append(f"{server} table {table}: {', '.join(cols)}")
    data = f"the node names: {hints}\n" + "\n".join(names)
    if "+d" in config:
        data = f"the node names: {hints}\n{deps.data.render()}"
    return {
        "check": check_text(deps.brief),
        "data": data,
        "parameters": deps.brief.parameters,
        "demonstrations": render(deps.demos),
        "feedback": feedback,
    }


def sample_config(i: int, rollout: int) -> dict[str, Any]:
    """The LM config of sample ``i``: the first greedy, the rest at temperature, each with its
    own rollout (``rollout`` tells one round's or run's samples from another's)."""
    if i == 0:
        return {"temperature": 0.0}
    return {"temperature": TEMPERATURE, "rollout_id": rollout, "seed": rollout}


async def sample_spec(
    module: CheckMakerModule,
    lm: Any,
    fmt: dict[str, Any],
    config: dict[str, Any],
    texts: dict[str, str],
):
    """One constrained call: (spec dict or None, problem, usage)."""
    with dspy_context_with(lm, fmt), dspy.track_usage() as usage:
        try:
            pred = await module.acall(config=config, **texts)
            problem = None
        except Exception as exc:  # noqa: BLE001 - an unusable reply is a failed sample, kept
            pred, problem = None, f"no spec: {call_failure(exc)}"
    spent = usage_of(usage)
    if pred is None:
        return None, problem, spent
    raw = pred.spec
    try:
        spec = as_spec_dict(raw if not isinstance(raw, str) else json.loads(raw))
    except Exception as exc:  # noqa: BLE001
        return None, f"no spec: {call_failure(exc)}", spent
    return spec, None, spent


def tool_file(node_id: str, text: str, spec: dict[str, Any]) -> str:
    """The tool file of a kept spec: the spec as data, ``run`` made from it."""
    doc = docstring(f"{node_id} (made by the tool-maker as a spec): {' '.join(text.split())[:400]}")
    body = pprint.pformat(canonical(spec), indent=1, width=96, sort_dicts=False)
    return f"{doc}\n\nfrom sopgraph.tools.spec import tool\n\nSPEC = {body}\n\nrun = tool(SPEC)\n"


def search_candidates(deps: SpecDeps) -> list[dict[str, Any]]:
    """The LLM-free search's enumerated specs for the node (its hinted data, the windows its
    text names, its parameters): candidates that join the model's samples by default
    (measured: 13 of 14 held-out with them against 10 without, docs/toolmaker.md)."""
    return enumerate_specs(
        deps.node.text, list(deps.node.data), deps.data, deps.brief.param_names,
        deps.input_fields,
    )  # fmt: skip


async def make_spec_tool(
    deps: SpecDeps,
    train: list[Case],
    *,
    config: str = "sop+d+r",
    samples: int = SAMPLES,
    rounds: int = ROUNDS,
    seed: int = 0,
    on_stage: Stage = _noop,
    extra_candidates: list[dict[str, Any]] | None = None,
    label_free: bool = False,
) -> MakeRecord:
    """Make one node's tool as a spec from its labeled training cases.

    ``extra_candidates`` (the LLM-free search's enumeration, say) join round 0's samples and
    are chosen by the same execution; a kept one is marked ``found_by="enumeration"``.
    ``label_free``: ``train``'s labels are not read; round 0's votes label them
    (``pseudo_labels``).
    """
    if label_free:
        train = [c.model_copy(update={"expected": None}) for c in train]
    start = time.perf_counter()
    with_repair = "+r" in config
    record = MakeRecord(
        node=deps.node.id, config=config, seed=seed, model=deps.model,  # type: ignore[arg-type]
        form="spec", train_cases=len(train), samples=samples, label_free=label_free,
        demonstrations=[f"{d.node} ({d.score})" for d in deps.demos],
    )  # fmt: skip
    if "+d" in config:
        record.discovery = deps.data.render()
    reply = spec_model(
        deps.data, params_of(deps.brief, deps.node.text), deps.input_fields, list(deps.node.data)
    )
    fmt = response_format(reply)
    module = CheckMakerModule(program=deps.program)
    record.program = module.program.name if module.program else None
    feedback = "none"
    best: tuple[dict[str, Any], Score, int] | None = None
    for n in range(1 + (rounds if with_repair else 0)):
        r0 = time.perf_counter()
        texts = inputs(deps, config, feedback)
        rnd = Round(round=n, candidate=Candidate(code=""))
        seen: dict[str, int] = {}
        ran: list[tuple[dict[str, Any], Score]] = []  # distinct specs that ran, in sample order
        for i in range(samples):
            on_stage("sample", f"round {n}: candidate {i + 1}/{samples}")
            t0 = time.perf_counter()
            cfg = sample_config(i, seed * 1000 + n * 100 + i)
            spec, problem, usage = await sample_spec(module, deps.lm, fmt, cfg, texts)
            sample = Sample(index=i, spec=spec, problem=problem, input_tokens=usage.input_tokens,
                            output_tokens=usage.output_tokens)  # fmt: skip
            if label_free and spec is not None:  # no label can say which value is true: the text
                spec, sample.settled = stated_test(spec, deps.data.records, deps.sop, deps.node)
                sample.spec = spec
            rnd.input_tokens += usage.input_tokens
            rnd.output_tokens += usage.output_tokens
            if spec is not None:
                key = json.dumps(spec, sort_keys=True)
                if key in seen:
                    sample.duplicate_of = seen[key]
                else:
                    seen[key] = i
                    score = await deps.runner.score(spec, train)
                    sample.passed, sample.cases, sample.problem = (
                        score.passed,
                        score.cases,
                        score.problem,
                    )
                    if score.problem is None:
                        ran.append((spec, score))
            sample.seconds = round(time.perf_counter() - t0, 2)
            rnd.samples.append(sample)
        if n == 0 and label_free:
            votes = [(weight(rnd.samples, spec), score) for spec, score in ran]
            labels = pseudo_labels(votes)
            train = [c.model_copy(update={"expected": labels.get(c.key())}) for c in train]
            ran = [(spec, await deps.runner.score(spec, train)) for spec, _ in ran]
            now = {json.dumps(spec, sort_keys=True): score for spec, score in ran}
            for x in rnd.samples:  # each sample's score, against the pseudo-labels now
                if x.spec is not None and x.duplicate_of is None:
                    got = now.get(json.dumps(x.spec, sort_keys=True))
                    x.passed = got.passed if got else x.passed
            record.notes.append(
                f"label-free: {len(labels)} of {len(train)} training cases labelled by the votes "
                f"of {sum(w for w, _ in votes)} samples ({len(votes)} distinct specs)"
            )
        enumerated: set[str] = set()
        if n == 0 and extra_candidates:
            on_stage("enumerate", f"{len(extra_candidates)} enumerated candidates")
            for cand in extra_candidates:
                key = json.dumps(cand, sort_keys=True)
                if key in seen or key in enumerated:
                    continue
                enumerated.add(key)
                cand_score = await deps.runner.score(cand, train)
                if cand_score.problem is None:
                    ran.append((cand, cand_score))
        ranked = sorted(ran, key=lambda x: (-x[1].passed, size(x[0])))  # stable: sample order

        def origin(spec: dict[str, Any], enumerated: set[str] = enumerated) -> Any:
            return "enumeration" if json.dumps(spec, sort_keys=True) in enumerated else "model"

        if ranked:
            spec, score = ranked[0]
            rnd.found_by = origin(spec)
            if with_repair and score.passed < score.cases:
                # the conventions of the SEARCH_TOP best distinct candidates: the best one may be
                # a spurious shape while a runner-up has the right shape and a wrong convention
                on_stage("search", f"round {n}: conventions of the best {SEARCH_TOP} candidates")
                for cand, cand_score in ranked[:SEARCH_TOP]:
                    found, found_score, steps = await improve(deps.runner, cand, cand_score, train)
                    if (found_score.passed, -size(found)) > (score.passed, -size(spec)):
                        spec, score = found, found_score
                        rnd.search = steps
                        rnd.found_by = "search" if steps else origin(cand)
            rnd.candidate = Candidate(code=tool_file(deps.node.id, deps.node.text, spec), spec=spec)
            rnd.passed, rnd.cases = score.passed, score.cases
            rnd.train_pass = round(score.rate, 4)
            rnd.failures = [r for r in score.results if not r.correct][:5]
            if best is None or score.passed > best[1].passed:
                best = (spec, score, n)
        else:
            rnd.candidate = Candidate(code="", problem="no sample gave a spec that runs")
            rnd.cases = len(train)
        full = best is not None and best[1].passed == best[1].cases
        last = not with_repair or n == rounds or full
        if not last and deps.reflector is not None and best is not None:
            on_stage("reflect", f"round {n}: {best[1].cases - best[1].passed} failures")
            failing = failures_text(best[1])
            shown = json.dumps(canonical(best[0]))
            diagnosis, spent = await deps.reflector.diagnose(deps.brief, "none", shown, failing)
            rnd.diagnosis = diagnosis
            rnd.input_tokens += spent.input_tokens
            rnd.output_tokens += spent.output_tokens
            feedback = (
                f"best candidate so far ({best[1].passed}/{best[1].cases} training cases):\n"
                f"{shown}\n\nfailing cases:\n{failing}\n\ndiagnosis:\n{diagnosis}"
            )
        rnd.seconds = round(time.perf_counter() - r0, 2)
        record.rounds.append(rnd)
        record.input_tokens += rnd.input_tokens
        record.output_tokens += rnd.output_tokens
        if last:
            break
    if best is None:
        record.notes.append("no round produced a spec that runs")
        record.best_round, record.train_pass = 0, 0.0
    else:
        record.best_round, record.train_pass = best[2], round(best[1].rate, 4)
    record.seconds = round(time.perf_counter() - start, 2)
    on_stage("done", f"train {record.train_pass:.0%}")
    return record


def weight(samples: list[Sample], spec: dict[str, Any]) -> int:
    """How many of the samples gave ``spec``."""
    key = json.dumps(spec, sort_keys=True)
    return sum(
        1 for x in samples if x.spec is not None and json.dumps(x.spec, sort_keys=True) == key
    )


def pseudo_labels(votes: list[tuple[int, Score]]) -> dict[str, Any]:
    """Per training case (``Case.key``): the verdict the most samples' specs give it, each spec
    weighing as many samples as gave it; a tie goes to the verdict of the earliest spec among
    the tied (the greedy sample first). A case no spec decided gets no label."""
    tally: dict[str, dict[Any, list[int]]] = {}
    for order, (w, score) in enumerate(votes):
        for r in score.results:
            if r.value is None:
                continue
            cell = tally.setdefault(r.case.key(), {}).setdefault(r.value, [0, order])
            cell[0] += w
    return {
        key: min(values.items(), key=lambda kv: (-kv[1][0], kv[1][1]))[0]
        for key, values in tally.items()
    }


async def score_spec_heldout(
    deps: SpecDeps, record: MakeRecord, held_out: list[Case]
) -> MakeRecord:
    """Run the kept spec on the held-out cases (after the make; never shown to the model)."""
    best = record.best
    record.eval_cases = len(held_out)
    if best is None or best.candidate.spec is None or not held_out:
        record.eval_pass = 0.0
        return record
    score = await deps.runner.score(best.candidate.spec, held_out)
    record.eval_pass = round(score.rate, 4)
    wrong = [r for r in score.results if not r.correct]
    if wrong:
        record.notes.append(
            f"held-out: {len(wrong)} of {len(held_out)} wrong, e.g. "
            + "; ".join(
                f"{r.case.site} {r.case.timestamp} expected {r.case.expected} got {r.value or r.error}"
                for r in wrong[:3]
            )
        )
    return record
