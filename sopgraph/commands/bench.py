"""``sopgraph bench triage|serve``: latency and throughput.

``bench sopbench`` is registered by sopbench.py.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from sopgraph.arguments import positive_int
from sopgraph.checkpoint_store import check_checkpoint
from sopgraph.graphs.untrusted_text import json_text
from sopgraph.model_choice import ARCH_HELP, models_for
from sopgraph.progress import progress_bar
from sopgraph.triage_world import TRIAGE_SOP, first_scenarios, world


def cmd_bench_triage(args: argparse.Namespace) -> int:
    check_checkpoint(args.checkpoint)
    from sopgraph.evals.bench_triage import bench_triage
    from sopgraph.runtime import eventloop

    models = models_for(args.arch)
    scenarios = first_scenarios(world(), "all", args.alarms)
    runs: list[dict[str, Any]] = []
    with progress_bar(True) as bar:
        for k in range(args.repeat):
            tasks: dict[str, Any] = {}
            label = f"run {k + 1}/{args.repeat}: " if args.repeat > 1 else ""

            def tick(phase: str, i: int, n: int, tasks=tasks, label=label) -> None:
                if phase not in tasks:
                    tasks[phase] = bar.add_task(label + phase, total=n)
                bar.update(tasks[phase], completed=i)

            try:
                figures = eventloop.run(
                    bench_triage(
                        TRIAGE_SOP,
                        scenarios,
                        concurrency=args.concurrency,
                        checkpoint=args.checkpoint,
                        workers=args.workers,
                        arch=args.arch,
                        model=models.chat,
                        lm=models.lm,
                        progress=tick,
                    )  # fmt: skip
                )
            except BaseException:
                if runs:  # what the finished runs measured is not lost with the one that failed
                    bar.stop()
                    print(f"stopped after {len(runs)} of {args.repeat} runs", file=sys.stderr)
                    _print_runs(args, runs)
                raise
            runs.append(figures)
    _print_runs(args, runs)
    return 0


def _print_runs(args: argparse.Namespace, runs: list[dict[str, Any]]) -> None:
    from sopgraph.evals.bench_triage import summarize_runs

    if args.repeat == 1:
        figures = runs[0]
        if args.json:
            print(json_text(figures))
        else:
            for k, v in figures.items():
                print(f"{k}: {v}")
        return
    summary = summarize_runs(runs)
    if args.json:
        print(json_text({"summary": summary, "runs": runs}))
    else:
        _print_repeated(summary, runs)


def _print_repeated(summary: dict[str, Any], runs: list[dict[str, Any]]) -> None:
    """One line of target verdicts per run, the spread of the key figures, the pass counts."""
    for i, r in enumerate(runs, 1):
        t = r["targets"]
        verdicts = [
            f"{name} {v['value']} ({'met' if v['met'] else 'NOT met'})"
            for name, v in t.items()
            if name != "all_met"
        ]
        print(f"run {i}: {'  '.join(verdicts)}  all met: {'yes' if t['all_met'] else 'no'}")
    for name, s in summary["spread"].items():
        print(f"{name}: min {s['min']}  median {s['median']}  max {s['max']}")
    met = summary["targets_met_in_runs"]
    print("targets met in runs: " + ", ".join(f"{k} {v}/{summary['runs']}" for k, v in met.items()))


def cmd_bench_serve(args: argparse.Namespace) -> int:
    from sopgraph.evals.bench_serve import bench_serve

    figures = asyncio.run(bench_serve(n=args.runs, concurrency=args.concurrency))
    print(json_text(figures) if args.json else
          "\n".join(f"{k}: {v}" for k, v in figures.items()))  # fmt: skip
    return 0 if all(f.get("failed", 0) == 0 for f in figures.values() if isinstance(f, dict)) else 1


def _workers(text: str) -> int:
    """``--workers``: 0 (skip the worker figures) or more."""
    if text.strip() == "0":
        return 0
    try:
        return positive_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"{text!r} is not 0 or a whole number above it") from None


def register(sub: Any) -> None:
    """Register ``bench`` with ``triage`` and ``serve`` on the top-level subparsers."""
    be = sub.add_parser("bench", help="latency and throughput").add_subparsers(
        dest="what", required=True
    )
    bt = be.add_parser("triage", help="per-alarm p50/p99, alarms/s and the in-process lower bound")
    bt.add_argument("--alarms", type=positive_int, default=200, help="default 200")
    bt.add_argument(
        "--concurrency", type=positive_int, default=8, help="alarms at once (default 8)"
    )
    bt.add_argument(
        "--checkpoint",
        default="memory",
        help="memory (default), a SQLite path, or postgres://… to include durability",
    )
    bt.add_argument(
        "--arch", choices=["direct", "subagent", "codeact"], default="direct", help=ARCH_HELP
    )
    bt.add_argument(
        "--workers",
        type=_workers,
        default=2,
        help="time 1..N worker processes sharing a SQLite checkpoint store (default 2; 0: skip)",
    )
    bt.add_argument(
        "--repeat",
        type=positive_int,
        default=1,
        help="run the whole measurement N times and print the spread of the figures and in "
        "how many runs each target was met (default 1)",
    )
    bt.add_argument("--json", action="store_true", help="print the figures as JSON")
    bt.set_defaults(fn=cmd_bench_triage)
    bs = be.add_parser("serve", help="concurrent runs through the LangGraph and MCP servers")
    bs.add_argument(
        "--runs", type=positive_int, default=50, help="triage runs per server (default 50)"
    )
    bs.add_argument(
        "--concurrency", type=positive_int, default=50, help="runs submitted at once (default 50)"
    )
    bs.add_argument("--json", action="store_true", help="print the figures as JSON")
    bs.set_defaults(fn=cmd_bench_serve)
