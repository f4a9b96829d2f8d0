"""CLI commands that measure: ``demo``, ``eval triage``, ``eval tools``, ``bench triage|serve``."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from sopgraph.examples import EXAMPLES

TRIAGE_SOP = EXAMPLES / "fc_alarm_triage"


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (0 would mean all, or wait forever)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n} is not at least 1")
    return n


def _bar(enabled: bool):
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=Console(stderr=True), transient=True, disable=not enabled,
    )  # fmt: skip


def _world():
    from sopgraph.evals.fc_triage.build import build_world
    from sopgraph.nodes.mcp_client import home_dir

    return build_world(home_dir(), progress=sys.stderr.isatty())


def _models(arch: str):
    from sopgraph.cli import models_for

    return models_for(arch)


def _scenarios(paths, split: str, n: int | None) -> list:
    from sopgraph.evals.fc_triage.dataset import load_scenarios

    scenarios = load_scenarios(paths.scenarios, split=None if split == "all" else split)
    return scenarios[:n] if n else scenarios


def cmd_demo(args: argparse.Namespace) -> int:
    from sopgraph.cli import UserError
    from sopgraph.demo import main

    if args.report and Path(args.report).is_dir():  # found now, not after the whole batch
        raise UserError(f"--report {args.report}: is a folder; give an .html file path inside it")
    return main(n=args.alarms, report=Path(args.report) if args.report else None)


def cmd_eval_triage(args: argparse.Namespace) -> int:
    from sopgraph.evals.triage_eval import eval_triage, summarize

    models = _models(args.arch)
    sop = Path(args.sop) if args.sop else TRIAGE_SOP
    if not (sop / "sop.yaml").is_file():
        from sopgraph.cli import UserError

        raise UserError(
            f"--sop {args.sop}: no sop.yaml there; give a copy of the triage SOP folder"
        )
    if args.arch != "direct":  # a model: one alarm at a time on a sample covering every type
        from sopgraph.cli_model import cmd_triage

        return cmd_triage(args)
    scenarios = _scenarios(_world(), args.split, args.alarms)
    with _bar(not args.json or sys.stderr.isatty()) as bar:
        task = bar.add_task(f"triage ({args.arch})", total=len(scenarios))
        outcomes = asyncio.run(
            eval_triage(
                sop,
                scenarios,
                arch=args.arch,
                model=models.chat,
                lm=models.lm,
                concurrency=args.concurrency,
                on_result=lambda _: bar.advance(task),
            )  # fmt: skip
        )
    summary = {"split": args.split} | summarize(outcomes, args.arch)
    if args.split != "train":  # a trivial triage next to the figure: majority verdict per node
        from sopgraph.evals.fc_triage.dataset import load_scenarios
        from sopgraph.evals.triage_eval import majority_baseline

        paths = _world()
        summary["baseline_majority_accuracy"] = majority_baseline(
            TRIAGE_SOP, load_scenarios(paths.scenarios, "train"), scenarios
        )
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    for key in ("split", "arch", "n", "accuracy", "baseline_majority_accuracy", "observation_acc",
                "root_cause_acc", "action_acc", "llm_tokens_per_alarm", "unresolved_alarms"):  # fmt: skip
        if key in summary:
            print(f"{key}: {summary[key]}")
    for f in summary["failures"]:
        print(f"  wrong: {f['alarm_id']} {f['type']} {f['site']}: {json.dumps(f['diff'])}")
    return 0


def cmd_eval_tools(args: argparse.Namespace) -> int:
    from sopgraph.evals.tool_eval import eval_tools, summarize

    paths = _world()
    split = None if args.split == "all" else args.split
    nodes = [n.strip() for n in args.nodes.split(",") if n.strip()] if args.nodes else None
    if nodes:
        from sopgraph.cli import UserError
        from sopgraph.graphs.loader import load_sop

        known = {n.id for n in load_sop(TRIAGE_SOP).decision_nodes}
        if unknown := [n for n in nodes if n not in known]:
            raise UserError(f"--nodes: no decision node {', '.join(unknown)} in {TRIAGE_SOP.name}")
    with _bar(not args.json or sys.stderr.isatty()) as bar:
        task = bar.add_task(f"tools on {args.split} cases", total=None)
        results = asyncio.run(
            eval_tools(
                TRIAGE_SOP, paths.cases, split, nodes=nodes, on_node=lambda _: bar.advance(task)
            )
        )
    summary = summarize(results, split)
    if args.json:
        print(json.dumps(summary, indent=2, default=str))
        return 0
    from sopgraph.graphs.untrusted_text import printable

    print(f"{summary['passed']}/{summary['nodes']} nodes pass every {args.split} case")
    for r in results:
        if not r.passed:
            why = r.error or f"{r.correct}/{r.cases} cases right"
            print(printable(f"  FAIL {r.node}: {why}"))  # a tool's or a server's error text
            for f in r.failures[:3]:
                print(
                    printable(
                        f"       {f.site} {f.timestamp}: expected {f.expected}, got {f.got} "
                        f"(observed {f.observed}; expected observed {f.expected_observed}) {f.error or ''}"
                    )
                )
    for r in results:
        for problem in r.unit_problems:
            print(f"  UNITS {problem}")
    return 0


def cmd_bench_triage(args: argparse.Namespace) -> int:
    from sopgraph.cli import check_checkpoint

    check_checkpoint(args.checkpoint)
    from sopgraph.evals.bench_triage import bench_triage
    from sopgraph.graphs import eventloop

    models = _models(args.arch)
    scenarios = _scenarios(_world(), "all", args.alarms)
    runs: list[dict[str, Any]] = []
    with _bar(True) as bar:
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
            print(json.dumps(figures, indent=2))
        else:
            for k, v in figures.items():
                print(f"{k}: {v}")
        return
    summary = summarize_runs(runs)
    if args.json:
        print(json.dumps({"summary": summary, "runs": runs}, indent=2))
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
    print(json.dumps(figures, indent=2) if args.json else
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


_ARCH_HELP = "direct: compiled tools (default); subagent or codeact: needs SOPGRAPH_MODEL"


def add_commands(sub: Any) -> None:
    """Register ``demo``, ``eval`` and ``bench`` on the top-level subparsers."""
    d = sub.add_parser("demo", help="the default job: triage recent alarms of the simulated dock")
    d.add_argument(
        "--alarms", type=positive_int, default=40, help="how many recent alarms (default 40)"
    )
    d.add_argument(
        "--report",
        help="HTML report path (default $SOPGRAPH_HOME/reports/demo.html, home .sopgraph/)",
    )
    d.set_defaults(fn=cmd_demo)

    ev = sub.add_parser("eval", help="accuracy against ground truth").add_subparsers(
        dest="what", required=True
    )
    et = ev.add_parser("triage", help="end-to-end alarm triage accuracy")
    et.add_argument(
        "--alarms",
        type=positive_int,
        help="first N scenarios (default all of the split); with a model arch (subagent, "
        "codeact), N alarms covering every alarm type, run one at a time beside the all-false "
        "baseline and the compiled tools (as `sopgraph model triage`)",
    )
    et.add_argument(
        "--split",
        choices=["train", "eval", "all"],
        default="eval",
        help="scenarios to run (default eval: the 750 held-out ones; all mixes in training)",
    )
    et.add_argument(
        "--arch", choices=["direct", "subagent", "codeact"], default="direct", help=_ARCH_HELP
    )
    et.add_argument(
        "--concurrency", type=positive_int, default=4, help="alarms at once (default 4)"
    )
    et.add_argument("--json", action="store_true", help="print the summary as JSON")
    et.add_argument("--sop", help="a copy of the triage SOP folder (e.g. with a promoted tool)")
    et.add_argument(
        "--progress", help="with a model arch: append each finished alarm's figures to this JSONL"
    )
    et.set_defaults(fn=cmd_eval_triage)
    eto = ev.add_parser("tools", help="per-node pass rate of the active tools (pass@1)")
    eto.add_argument(
        "--split",
        choices=["train", "eval", "all"],
        default="eval",
        help="labeled cases to check against (default eval: the held-out ones)",
    )
    eto.add_argument("--nodes", help="comma-separated node ids (default: every decision node)")
    eto.add_argument("--json", action="store_true", help="print the summary as JSON")
    eto.set_defaults(fn=cmd_eval_tools)
    from sopgraph.cli_toolmaker import add_eval_toolmaker

    add_eval_toolmaker(ev)

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
        "--arch", choices=["direct", "subagent", "codeact"], default="direct", help=_ARCH_HELP
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
