"""``sopgraph world mutations|timeline``: the simulated dock's mutations and drift timelines."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from sopgraph.arguments import positive_int
from sopgraph.errors import UserError
from sopgraph.graphs.home import home_dir
from sopgraph.graphs.untrusted_text import json_text
from sopgraph.progress import progress_bar
from sopgraph.triage_world import TRIAGE_SOP, world


def cmd_mutations(args: argparse.Namespace) -> int:
    from sopgraph.evals.fc_triage.mutations import mutation_table, table_json

    paths = world()
    split = None if args.split == "all" else args.split
    rows = mutation_table(paths.root, TRIAGE_SOP, split)
    summary = table_json(rows, split)
    if args.json:
        print(json_text(summary))
    else:
        print(f"{'convention':26} {'node':28} {'flips':>5} / cases   wrong variant")
        for r in rows:
            mark = "" if r.ok else "  <-- fewer than 3"
            print(f"{r.convention:26} {r.node:28} {r.flips:5} / {r.cases:<5}  {r.wrong}{mark}")
        print(f"{summary['pairs_ok']}/{summary['pairs']} convention x node pairs flip at least "
              f"{summary['min_flips']} {args.split} cases")  # fmt: skip
    return 0 if summary["pairs_ok"] == summary["pairs"] else 1


def run_timeline(args: argparse.Namespace, drift: bool, candidates: dict[str, int]) -> dict:
    """Replay the alarms in time order into ``--out``, clean or with drift; the summary."""
    from sopgraph.evals.fc_triage import timeline

    paths = world()
    out = Path(args.out) if args.out else home_dir() / "timelines" / ("drift" if drift else "clean")
    with progress_bar(sys.stderr.isatty()) as bar:
        task = bar.add_task("timeline", total=args.alarms or None)
        return asyncio.run(
            timeline.run_timeline(paths, timeline_sop(args), out, drift=drift, alarms=args.alarms,
                                  candidates=candidates or None, on_alarm=lambda: bar.advance(task))
        )  # fmt: skip


def timeline_sop(args: argparse.Namespace) -> Path:
    """The triage SOP folder the timeline runs (``--sop``: a copy of it, e.g. the one
    ``model triage --arch check-only`` registers its candidates in)."""
    sop = Path(args.sop or TRIAGE_SOP)
    if not (sop / "sop.yaml").is_file():
        raise UserError(f"--sop {sop}: no sop.yaml there; give the triage SOP's folder or a copy")
    return sop


def cmd_timeline(args: argparse.Namespace) -> int:
    summary = run_timeline(args, args.kind == "drift", {})
    print(json_text(summary) if args.json else
          f"{summary['alarms']} alarms -> {summary['out']} ({summary['seconds']} s)")  # fmt: skip
    return 0


def add_timeline_args(p: argparse.ArgumentParser) -> None:
    """The options of a timeline replay (``world timeline``, ``shadow``)."""
    p.add_argument("--sop", help="the triage SOP folder, or a copy of it (default the example)")
    p.add_argument("--alarms", type=positive_int, help="first N alarms (default all 1,500)")
    p.add_argument("--out", help="folder (default $SOPGRAPH_HOME/timelines/<drift|clean>)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


def register(sub: Any) -> None:
    """Register ``world`` with ``mutations`` and ``timeline`` on the top-level subparsers."""
    w = sub.add_parser("world", help="the simulated dock: convention mutations, drift timelines")
    ws = w.add_subparsers(dest="what", required=True)
    m = ws.add_parser("mutations", help="held-out cases each wrong convention flips, per node")
    m.add_argument("--split", choices=["train", "eval", "all"], default="eval", help="default eval")
    m.add_argument("--json", action="store_true", help="print the table as JSON")
    m.set_defaults(fn=cmd_mutations)

    t = ws.add_parser("timeline", help="replay the alarms in time order, clean or with drift")
    t.add_argument("kind", choices=["drift", "clean"], help="drift: three injected drifts")
    add_timeline_args(t)
    t.set_defaults(fn=cmd_timeline)
