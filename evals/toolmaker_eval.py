"""``sopgraph eval toolmaker``: per-node held-out pass@1 of the spec tool-maker.

For each configuration, seed and node, one make runs on the node's training cases and its
kept spec is scored on the held-out cases (a tool passes only if every held-out case is right,
as in the paper). Every make record is saved, so each figure can be traced to its samples,
the search's steps and the diagnoses. Beside it: the LLM-free search (the same execution with
no model) and the trivial baseline, a tool that always answers the training cases' most common
verdict. Label-free makes never read the training labels; their held-out score still reads the
held-out labels, as the paper reports pass@1. The summary and report made from the rows are
in ``evals/toolmaker_report.py``.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sopgraph.evals.fc_triage.dataset import load_cases
from sopgraph.tools.toolmaker.record import Case, MakeRecord
from sopgraph.tools.toolmaker.session import MakeSession  # noqa: F401 - also a type here

# Fixed before any live run (issue 13): observations, root causes and constraints of the
# alarm-triage SOP covering windows, ratios, counters, latest readings and null handling.
NODE_SET = [
    "obs_station_idle",  # window average of a gauge; a silent exporter is no_data
    "obs_upstream_flow_low",  # ratio to plan over a window (SQL)
    "obs_sorter_jams",  # counter over 30 minutes (SQL)
    "obs_label_fail_high",  # percentage over a window (PromQL)
    "obs_pick_error_high",  # ratio of two counters; a zero denominator
    "rc_upstream_blockage",  # ratio below a percentage of plan
    "rc_upstream_jam",  # counter of jams in 30 minutes
    "rc_recirc_high",  # ratio above a percentage
    "rc_suction_cup_worn",  # window average below a floor
    "rc_robot_telemetry_gap",  # null handling: no samples at all is `true`, not no_data
    "rc_label_stock_low",  # the latest reading only
    "ct_repeat_robot_faults",  # count of events in 24 hours (ops store)
    "ct_robot_ticket_open",  # open ticket at the alarm time (ops store)
    "ct_error_rate_critical",  # ratio over 15 minutes at or above a threshold
]


def node_cases(cases_dir: Path, node: str, split: str) -> list[Case]:
    """A node's labeled cases of one split, in the pipeline's own format."""
    return [
        Case(site=c.site, timestamp=c.timestamp, input=c.input, expected=c.expected)
        for c in load_cases(cases_dir, node, split)  # type: ignore[arg-type]
    ]


def majority_baseline(train: list[Case], held_out: list[Case]) -> float:
    """Held-out accuracy of always answering the training cases' most common verdict."""
    if not train or not held_out:
        return 0.0
    label = Counter(c.expected for c in train).most_common(1)[0][0]
    return round(sum(c.expected == label for c in held_out) / len(held_out), 4)


def _row(record: MakeRecord, train: list[Case], held_out: list[Case]) -> dict[str, Any]:
    return {
        "config": record.config,
        "seed": record.seed,
        "node": record.node,
        "passed": record.eval_pass == 1.0,
        "eval_pass": record.eval_pass,
        "train_pass": record.train_pass,
        "best_round": record.best_round,
        "rounds": len(record.rounds),
        "tokens": record.tokens,
        "seconds": record.seconds,
        "baseline_eval_acc": majority_baseline(train, held_out),
        "notes": record.notes,
    }


# -- the spec pipeline (many candidates chosen by execution) -----------------------------


async def spec_deps(
    session: MakeSession,
    node_id: str,
    demos_from: str = "library",
    k: int = 3,
    exclude: frozenset[str] = frozenset(),
    program: str | Path | None = "default",
):
    """One node's ``SpecDeps`` from an open session (demos: library, or none for cold start;
    never of a node in ``exclude``); ``program``: the tool-maker's saved program."""
    from sopgraph.graphs.loader import load_sop
    from sopgraph.tools.registry import Registry
    from sopgraph.tools.toolmaker.context import brief_for
    from sopgraph.tools.toolmaker.data_catalog import DataCatalog
    from sopgraph.tools.toolmaker.demos import library_specs, nearest
    from sopgraph.tools.toolmaker.execution import SpecRunner
    from sopgraph.tools.toolmaker.grammar import bound_fields
    from sopgraph.tools.toolmaker.reflector import Reflector
    from sopgraph.tools.toolmaker.sampling import SpecDeps

    node = session.node(node_id)
    keys = session.params.keys()
    brief = brief_for(
        session.sop, node, session.params.for_key(keys[0] if keys else None), session.catalog
    )
    cache = session.__dict__.setdefault("_spec_cache", {})
    if "data" not in cache:
        cache["data"] = await DataCatalog.read(session.catalog, list(session.catalog.servers))
        cache["runner"] = SpecRunner(session.pool, session.params.for_input)
        cache["library"] = library_specs(session.sop, Registry(session.sop_dir / "tools"))
    data = cache["data"].only(brief.server_names)
    if demos_from == "library":
        pool = [d for d in cache["library"] if d.node not in exclude]
    elif demos_from == "none":
        pool = []
    else:  # another SOP's folder: its library's verified specs, none of this SOP's
        other = Path(demos_from)
        pool = library_specs(load_sop(other), Registry(other / "tools"))
    demos = nearest(pool, node.text, list(node.data), k, node.id) if pool else []
    fields = bound_fields(session.sop)
    return SpecDeps(
        sop=session.sop, node=node, brief=brief, data=data, runner=cache["runner"], demos=demos,
        input_fields=fields, lm=session.lm, reflector=Reflector(lm=session.judge_lm),
        model=session.model, program=program,
    )  # fmt: skip


async def eval_spec_toolmaker(
    session: MakeSession,
    cases_dir: Path,
    nodes: list[str],
    configs: list[str],
    seeds: list[int],
    *,
    samples: int = 8,
    rounds: int = 1,
    train_limit: int | None = None,
    demos_from: str = "library",
    baseline: bool = True,
    with_enumeration: bool = False,
    label_free: bool = False,
    program: str | Path | None = "default",
    out_dir: Path | None = None,
    on_stage: Callable[[str, str, str, str], None] | None = None,
    on_row: Callable[[list[dict[str, Any]]], None] | None = None,
) -> list[dict[str, Any]]:
    """One row per (node, seed, config), plus one ``llm-free`` row per node when ``baseline``.
    ``program``: the tool-maker's saved program (``"default"``: the optimized one when saved).

    ``with_enumeration``: the LLM-free search's enumerated specs join round 0's model samples
    (rows and records marked ``+enum``). ``label_free``: the tool-maker never reads the
    training labels (``make_spec_tool``'s votes label them; rows marked ``label-free``, their
    train pass against those pseudo-labels); held-out is scored against the real labels."""
    from sopgraph.tools.toolmaker.sampling import (
        make_spec_tool,
        score_spec_heldout,
        search_candidates,
    )
    from sopgraph.tools.toolmaker.search import llm_free

    library = library_spec_map(session)
    rows: list[dict[str, Any]] = []
    for node in nodes:
        train = node_cases(cases_dir, node, "train")
        if train_limit:
            train = _stratified(train, train_limit)
        held_out = node_cases(cases_dir, node, "eval")
        deps = await spec_deps(session, node, demos_from, program=program)
        if baseline:
            t0 = time.perf_counter()
            if on_stage:
                on_stage("llm-free", node, "search", "enumerating specs")
            spec, score, tried = await llm_free(
                deps.runner, deps.node.text, list(deps.node.data), deps.data,
                deps.brief.param_names, deps.input_fields, train,
            )  # fmt: skip
            rec = MakeRecord(node=node, config="sop", seed=0, model="llm-free",  # type: ignore[arg-type]
                             train_cases=len(train), notes=[f"searched {tried} specs"])  # fmt: skip
            if spec is not None and score is not None:
                from sopgraph.tools.toolmaker.record import Candidate, Round

                rec.rounds.append(Round(round=0, candidate=Candidate(code="", spec=spec),
                                        passed=score.passed, cases=score.cases,
                                        train_pass=round(score.rate, 4)))  # fmt: skip
                rec.best_round, rec.train_pass = 0, round(score.rate, 4)
            rec = await score_spec_heldout(deps, rec, held_out)
            rec.seconds = round(time.perf_counter() - t0, 2)
            row = _row(rec, train, held_out)
            row["config"] = "llm-free"
            row["spec"] = spec
            row["vs_library"] = vs_library(row, library)
            rows.append(row)
            if out_dir is not None:
                path = out_dir / "llm-free" / f"{node}.json"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(rec.model_dump_json(indent=1, by_alias=True))
        for seed in seeds:
            for config in configs:

                def stage(s: str, d: str, node=node, config=config) -> None:
                    if on_stage:
                        on_stage(config, node, s, d)

                start = time.perf_counter()
                extra = search_candidates(deps) if with_enumeration else None
                try:
                    record = await make_spec_tool(
                        deps, train, config=config, samples=samples, rounds=rounds, seed=seed,
                        on_stage=stage, extra_candidates=extra, label_free=label_free,
                    )  # fmt: skip
                    record = await score_spec_heldout(deps, record, held_out)
                except Exception as exc:  # noqa: BLE001 - one node's failure is its row
                    record = MakeRecord(
                        node=node, config=config, seed=seed, model=session.model,  # type: ignore[arg-type]
                        notes=[f"make failed: {type(exc).__name__}: {exc}"],
                        seconds=round(time.perf_counter() - start, 2),
                    )  # fmt: skip
                name = record_folder(config, demos_from, with_enumeration, label_free)
                if out_dir is not None:
                    path = out_dir / name / f"seed{seed}" / f"{node}.json"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(record.model_dump_json(indent=1, by_alias=True))
                row = _row(record, train, held_out)
                if demos_from != "library":
                    row["config"] = f"{config} cold"
                if with_enumeration:
                    row["config"] += " +enum"
                if label_free:
                    row["config"] += " label-free"
                best = record.best
                row["found_by"] = best.found_by if best else None
                row["spec"] = best.candidate.spec if best else None
                row["demonstrations"] = record.demonstrations
                row["program"] = record.program
                row["vs_library"] = vs_library(row, library)
                rows.append(row)
                if on_row:
                    on_row(rows)
    return rows


def record_folder(
    config: str, demos_from: str = "library", with_enumeration: bool = False,
    label_free: bool = False,
) -> str:  # fmt: skip
    """The folder under ``records/`` that one configuration's make records are written to."""
    name = config.replace("+", "_") + ("" if demos_from == "library" else "_cold")
    return name + ("_enum" if with_enumeration else "") + ("_label_free" if label_free else "")


def library_spec_map(session: MakeSession) -> dict[str, dict[str, Any]]:
    """Each node whose active library tool is a spec, and that spec (what a failing row is
    compared with)."""
    from sopgraph.tools.registry import Registry
    from sopgraph.tools.similar import library_specs

    pool = library_specs(session.sop, Registry(session.sop_dir / "tools"))
    return {entry.node: entry.spec for entry in pool}


def vs_library(row: dict[str, Any], library: dict[str, dict[str, Any]]) -> list[str] | None:
    """Where a failing row's kept spec departs from the node's library spec, one phrase each
    (``tools/spec/compare``); None for a row that passed, kept no spec or has no library spec."""
    from sopgraph.tools.spec.compare import differences

    reference = library.get(row["node"])
    if row["passed"] or not row.get("spec") or reference is None:
        return None
    try:
        return differences(row["spec"], reference)
    except Exception as exc:  # noqa: BLE001 - a row is reported even when this comparison fails
        return [f"not compared: {type(exc).__name__}: {exc}"]


def _stratified(cases: list[Case], n: int) -> list[Case]:
    """``n`` training cases, every verdict represented (the label-scarce variant)."""
    by: dict[str, list[Case]] = {}
    for c in cases:
        by.setdefault(str(c.expected), []).append(c)
    out: list[Case] = []
    while len(out) < n and any(by.values()):
        for label in sorted(by):
            if by[label] and len(out) < n:
                out.append(by[label].pop(0))
    return out


def register_passing(records: Path, config: str, sop_dir: Path, copy_dir: Path) -> list[str]:
    """Register every tool made that passed its held-out cases into a copy of the SOP's
    folder, as ``tool-maker:<model>`` versions, promoted; ``config`` names the records' folder
    (``record_folder``). Returns one line a node.

    The copy is what ``sopgraph eval triage --sop COPY`` runs: the library with the
    tool-maker's tools in place of the people's, for the nodes where they passed.
    """
    import shutil

    from sopgraph.tools.registry import Registry
    from sopgraph.tools.toolmaker.pipeline import register

    if not copy_dir.exists():
        shutil.copytree(sop_dir, copy_dir)
    registry = Registry(copy_dir / "tools")
    lines = []
    folder = records / config
    for path in sorted(folder.glob("seed*/*.json")):
        record = MakeRecord.model_validate_json(path.read_text())
        if record.eval_pass != 1.0:
            lines.append(f"{record.node}: not registered (held-out {record.eval_pass})")
            continue
        version = register(record, registry, record.node)
        registry.promote(record.node, version)
        lines.append(f"{record.node}: v{version} by tool-maker:{record.model}, promoted")
    return lines
