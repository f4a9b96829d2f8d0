"""``sopgraph eval toolmaker``: per-node held-out pass@1 of the tool-making pipeline.

For each configuration, seed and node, one make runs on the node's training cases and its
kept candidate is scored on the held-out cases in the sandbox (a tool passes only if every
held-out case is right, as in the paper). Every make record is saved, so each figure can be
traced to its candidates, traces and diagnoses. The trivial baseline is a tool that always
answers the training cases' most common verdict.
"""

from __future__ import annotations

import json
import statistics
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sopgraph.evals.fc_triage.dataset import load_cases
from sopgraph.tools.toolmaker.pipeline import make_tool, score_heldout
from sopgraph.tools.toolmaker.record import Case, MakeRecord
from sopgraph.tools.toolmaker.session import MakeSession

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


async def eval_toolmaker(
    session: MakeSession,
    cases_dir: Path,
    nodes: list[str],
    configs: list[str],
    seeds: list[int],
    *,
    rounds: int = 3,
    traces: int = 3,
    out_dir: Path | None = None,
    on_stage: Callable[[str, str, str, str], None] | None = None,
    on_row: Callable[[list[dict[str, Any]]], None] | None = None,
) -> list[dict[str, Any]]:
    """One row per (node, seed, config); records saved under ``out_dir`` when given.

    Node-major, so a run cut short still holds every configuration of the nodes it reached;
    ``on_row`` gets the rows so far after each make (to save partial results).
    """
    rows = []
    for node in nodes:
        for seed in seeds:
            for config in configs:
                deps = session.deps(node)
                train = node_cases(cases_dir, node, "train")
                held_out = node_cases(cases_dir, node, "eval")

                def stage(s: str, d: str, node=node, config=config) -> None:
                    if on_stage:
                        on_stage(config, node, s, d)

                start = time.perf_counter()
                try:
                    record = await make_tool(
                        deps, train, config=config, rounds=rounds, seed=seed,
                        traces=traces, on_stage=stage,
                    )  # fmt: skip
                    record = await score_heldout(deps, record, held_out)
                except Exception as exc:  # noqa: BLE001 - one node's failure is its row
                    record = MakeRecord(
                        node=node, config=config, seed=seed, model=session.model,  # type: ignore[arg-type]
                        notes=[f"make failed: {type(exc).__name__}: {exc}"],
                        seconds=round(time.perf_counter() - start, 2),
                    )  # fmt: skip
                if out_dir is not None:
                    path = out_dir / config.replace("+", "_") / f"seed{seed}" / f"{node}.json"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(record.model_dump_json(indent=1, by_alias=True))
                rows.append(_row(record, train, held_out))
                if on_row:
                    on_row(rows)
    return rows


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
        "sandbox_reason": record.best.sandbox_reason if record.best else None,
    }


def summarize(rows: list[dict[str, Any]], model: str, live: bool) -> dict[str, Any]:
    """Per configuration: mean pass@1 over nodes and seeds, tokens and seconds per node."""
    configs: dict[str, Any] = {}
    for config in dict.fromkeys(r["config"] for r in rows):
        mine = [r for r in rows if r["config"] == config]
        configs[config] = {
            "makes": len(mine),
            "pass_at_1": round(sum(r["passed"] for r in mine) / len(mine), 4),
            "mean_train_pass": round(statistics.fmean(r["train_pass"] for r in mine), 4),
            "tokens_per_node": round(statistics.fmean(r["tokens"] for r in mine)),
            "seconds_per_node": round(statistics.fmean(r["seconds"] for r in mine), 1),
            "nodes_passed": sorted({r["node"] for r in mine if r["passed"]}),
        }
    return {"model": model, "live": live, "configs": configs, "rows": rows}


def render_report(summary: dict[str, Any]) -> str:
    """A Markdown report: the per-configuration table, then every node's row."""
    mode = "live" if summary["live"] else "replayed or scripted (not a live figure)"
    out = [f"# Tool-maker evaluation ({summary['model']}, {mode})", ""]
    out += ["| config | makes | held-out pass@1 | mean train pass | tokens/node | s/node |",
            "|---|---|---|---|---|---|"]  # fmt: skip
    for name, c in summary["configs"].items():
        out.append(
            f"| {name} | {c['makes']} | {c['pass_at_1']:.0%} | {c['mean_train_pass']:.0%} | "
            f"{c['tokens_per_node']:,} | {c['seconds_per_node']:.0f} |"
        )
    out += ["", "| config | seed | node | held-out | train | baseline acc | round | tokens | s | notes |",
            "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in summary["rows"]:
        ev = "-" if r["eval_pass"] is None else f"{r['eval_pass']:.0%}"
        notes = "; ".join(r["notes"])[:200].replace("|", "/")
        out.append(
            f"| {r['config']} | {r['seed']} | {r['node']} | {ev}{' PASS' if r['passed'] else ''} "
            f"| {r['train_pass']:.0%} | {r['baseline_eval_acc']:.0%} | {r['best_round']} "
            f"| {r['tokens']:,} | {r['seconds']:.0f} | {notes} |"
        )
    return "\n".join(out) + "\n"


def dump(summary: dict[str, Any]) -> str:
    return json.dumps(summary, indent=2, default=str)
