"""``sopgraph eval triage|tools|fallback``: accuracy against ground truth.

``eval toolmaker`` is registered by toolmaker.py, with ``tools make``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from sopgraph.arguments import positive_int
from sopgraph.commands.model import SKIP_HELP
from sopgraph.commands.model import cmd_triage as model_triage
from sopgraph.errors import UserError
from sopgraph.graphs.untrusted_text import json_text
from sopgraph.model_choice import ARCH_HELP, models_for
from sopgraph.progress import progress_bar
from sopgraph.triage_world import TRIAGE_SOP, first_scenarios, world


def cmd_eval_triage(args: argparse.Namespace) -> int:
    from sopgraph.evals.triage_eval import eval_triage, summarize

    models = models_for(args.arch)
    sop = Path(args.sop) if args.sop else TRIAGE_SOP
    if not (sop / "sop.yaml").is_file():
        raise UserError(
            f"--sop {args.sop}: no sop.yaml there; give a copy of the triage SOP folder"
        )
    if args.arch != "direct":  # a model: one alarm at a time on a sample covering every type
        return model_triage(args)
    scenarios = first_scenarios(world(), args.split, args.alarms)
    with progress_bar(not args.json or sys.stderr.isatty()) as bar:
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

        paths = world()
        summary["baseline_majority_accuracy"] = majority_baseline(
            TRIAGE_SOP, load_scenarios(paths.scenarios, "train"), scenarios
        )
    if args.json:
        print(json_text(summary))
        return 0
    for key in ("split", "arch", "n", "accuracy", "baseline_majority_accuracy", "observation_acc",
                "root_cause_acc", "action_acc", "llm_tokens_per_alarm", "unresolved_alarms"):  # fmt: skip
        if key in summary:
            print(f"{key}: {summary[key]}")
    for f in summary["failures"]:
        print(f"  wrong: {f['alarm_id']} {f['type']} {f['site']}: {json.dumps(f['diff'])}")
    return 0


def cmd_eval_fallback(args: argparse.Namespace) -> int:
    from sopgraph.evals.fallback_eval import CasesError, eval_fallback
    from sopgraph.graphs.home import home_dir
    from sopgraph.model_choice import model_required

    sop = Path(args.sop)
    if not (sop / "sop.yaml").is_file():
        raise UserError(f"{sop}: no sop.yaml there; give the SOP's folder")
    models = model_required()
    nodes = [n.strip() for n in args.nodes.split(",") if n.strip()] if args.nodes else None
    work = home_dir() / "fallback-eval" / sop.resolve().name
    with progress_bar(not args.json or sys.stderr.isatty()) as bar:
        task = bar.add_task("fallback on labeled cases", total=None)
        try:
            summary = asyncio.run(
                eval_fallback(sop, models.lm, models.name, work, samples=args.samples,
                              nodes=nodes, on_case=lambda _: bar.advance(task))
            )  # fmt: skip
        except CasesError as exc:
            raise UserError(str(exc)) from None
    if args.json:
        print(json_text(summary, default=str))
        return 0
    for key in ("n", "fallback_accuracy", "tool_accuracy", "majority_accuracy", "unresolved",
                "tokens", "seconds"):  # fmt: skip
        print(f"{key}: {summary[key]}")
    for node, v in summary["per_node"].items():
        print(f"  {node}: fallback {v['fallback']}/{v['cases']}, tool {v['tool']}/{v['cases']}, "
              f"majority ({v['majority_label']}) {v['majority']}/{v['cases']}")  # fmt: skip
    print(
        f"candidates (inactive, in {summary['copy']}): {', '.join(summary['candidates']) or 'none'}"
    )
    return 0


def cmd_eval_tools(args: argparse.Namespace) -> int:
    from sopgraph.evals.tool_eval import eval_tools, summarize

    paths = world()
    split = None if args.split == "all" else args.split
    nodes = [n.strip() for n in args.nodes.split(",") if n.strip()] if args.nodes else None
    if nodes:
        from sopgraph.graphs.loader import load_sop

        known = {n.id for n in load_sop(TRIAGE_SOP).decision_nodes}
        if unknown := [n for n in nodes if n not in known]:
            raise UserError(f"--nodes: no decision node {', '.join(unknown)} in {TRIAGE_SOP.name}")
    with progress_bar(not args.json or sys.stderr.isatty()) as bar:
        task = bar.add_task(f"tools on {args.split} cases", total=None)
        results = asyncio.run(
            eval_tools(
                TRIAGE_SOP, paths.cases, split, nodes=nodes, on_node=lambda _: bar.advance(task)
            )
        )
    summary = summarize(results, split)
    if args.json:
        print(json_text(summary, default=str))
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


def register(sub: Any) -> None:
    """Register ``eval`` with ``triage`` and ``tools`` on the top-level subparsers."""
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
    et.add_argument("--skip", type=int, default=0, help="with a model arch: " + SKIP_HELP)
    et.add_argument(
        "--split",
        choices=["train", "eval", "all"],
        default="eval",
        help="scenarios to run (default eval: the 750 held-out ones; all mixes in training)",
    )
    et.add_argument(
        "--arch", choices=["direct", "subagent", "codeact"], default="direct", help=ARCH_HELP
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
    efb = ev.add_parser(
        "fallback",
        help="node verdicts of the Check fallback on an SOP's labeled cases, beside its tools",
    )
    efb.add_argument("sop", help="the SOP's folder, with cases/*.jsonl (as `sopgraph init` writes)")
    efb.add_argument("--nodes", help="comma-separated node ids (default: every node with cases)")
    efb.add_argument("--samples", type=positive_int, default=5, help="Checks a node (default 5)")
    efb.add_argument("--json", action="store_true", help="print the summary as JSON")
    efb.set_defaults(fn=cmd_eval_fallback)
