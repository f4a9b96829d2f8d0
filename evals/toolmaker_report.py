"""The figures of a tool-maker evaluation: its summary, its report, the cost of sampling.

``evals/toolmaker_eval.py`` makes the rows (one per node, seed and configuration) and saves
the make records; this module turns the rows into the per-configuration summary and the
report ``sopgraph eval toolmaker`` writes, and reads the saved records back for what many
samples from one prompt cost against one.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from sopgraph.tools.toolmaker.record import MakeRecord


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
            "minutes_total": round(sum(r["seconds"] for r in mine) / 60, 1),
            "kept_from_search": sum(r.get("found_by") == "search" for r in mine),
            "nodes_passed": sorted({r["node"] for r in mine if r["passed"]}),
        }
    per_node = {r["node"]: r["baseline_eval_acc"] for r in rows}
    majority = {"nodes": len(per_node), "passed": sum(acc == 1.0 for acc in per_node.values()),
                "mean_heldout_accuracy": round(statistics.fmean(per_node.values()), 4) if per_node else 0.0}  # fmt: skip
    return {"model": model, "live": live, "configs": configs, "majority": majority, "rows": rows}


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
    m = summary.get("majority")
    if m:
        out += ["", f"Majority-label baseline (always the training cases' most common verdict): "
                f"passes {m['passed']} of {m['nodes']} nodes held-out, mean held-out accuracy "
                f"{m['mean_heldout_accuracy']:.0%}."]  # fmt: skip
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
    differing = [r for r in summary["rows"] if r.get("vs_library")]
    if differing:
        out += ["", "## Where each failing spec departs from the library's", ""]
        for r in differing:
            ev = "-" if r["eval_pass"] is None else f"{r['eval_pass']:.0%}"
            what = "; ".join(r["vs_library"]).replace("|", "/")
            out.append(f"- {r['config']}, {r['node']} (held-out {ev}): {what}")
    return "\n".join(out) + "\n"


def dump(summary: dict[str, Any]) -> str:
    return json.dumps(summary, indent=2, default=str)


def sampling_speed(records_dir: Path) -> dict[str, Any]:
    """N samples from one prompt against one, side by side, from a run's make records.

    Per node and round 0: the first sample pays for reading the prompt (llama.cpp then keeps
    its KV cache), the others only generate. Seconds include running each distinct sample
    on the training cases. Returns the means over the nodes that drew more than one sample.
    """
    firsts, alls, first_tok, all_tok, counts = [], [], [], [], []
    for path in sorted(Path(records_dir).glob("**/*.json")):
        try:
            record = MakeRecord.model_validate_json(path.read_text())
        except ValueError:
            continue
        if not record.rounds or len(record.rounds[0].samples) < 2:
            continue
        samples = record.rounds[0].samples
        firsts.append(samples[0].seconds)
        alls.append(sum(s.seconds for s in samples))
        first_tok.append(samples[0].output_tokens)
        all_tok.append(sum(s.output_tokens for s in samples))
        counts.append(len(samples))
    if not firsts:
        return {}
    one_s, n_s = statistics.fmean(firsts), statistics.fmean(alls)
    return {
        "nodes": len(firsts),
        "samples": round(statistics.fmean(counts), 1),
        "one_sample_s": round(one_s, 1),
        "all_samples_s": round(n_s, 1),
        "cost_ratio": round(n_s / one_s, 2),
        "one_sample_out_tok_s": round(sum(first_tok) / sum(firsts), 2),
        "all_samples_out_tok_s": round(sum(all_tok) / sum(alls), 2),
    }
