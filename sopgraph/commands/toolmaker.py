"""``sopgraph tools make``: make decision nodes' tools as specs and register them for review.

The other tool-maker commands live beside it: ``sopgraph tools optimize-maker``
(``toolmaker_optimize``) and ``sopgraph eval toolmaker`` (``toolmaker_eval``); what they share
is in ``toolmaker_common``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from sopgraph.arguments import CliParser
from sopgraph.commands import toolmaker_common as common
from sopgraph.commands.toolmaker_eval import register
from sopgraph.commands.toolmaker_optimize import cmd_tools_optimize_maker
from sopgraph.graphs.home import home_dir
from sopgraph.graphs.untrusted_text import json_text, printable
from sopgraph.output_file import write_output


def make_parser() -> argparse.ArgumentParser:
    p = CliParser(
        prog="sopgraph tools make",
        description="make tools for decision nodes: sample specs under the node's grammar, "
        "choose by running them on the training cases, repair; each kept spec is registered "
        "as a new inactive version",
    )
    p.add_argument("sop", help="SOP file or folder")
    p.add_argument("nodes", nargs="+", metavar="NODE", help="decision node ids")
    p.add_argument("--config", choices=common.CONFIGS, default="sop+d+r", help=common.CONFIG_HELP)
    p.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    common.spec_options(p)
    p.add_argument("--no-register", action="store_true", help="make and score only")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    return p


def cmd_tools_make(argv: list[str]) -> int:
    args = make_parser().parse_args(argv)
    common.check_rounds(args.rounds)
    sop_dir = common.sop_dir_of(args.sop)
    cases_dir = common.cases_dir_of(args.cases, sop_dir)
    nodes = common.decision_nodes(sop_dir, args.nodes, cases_dir)
    common.check_program(args.program)
    models = common.maker_models()
    from sopgraph.evals.toolmaker_eval import node_cases, spec_deps
    from sopgraph.tools.registry import Registry
    from sopgraph.tools.toolmaker.pipeline import register as register_version
    from sopgraph.tools.toolmaker.sampling import (
        make_spec_tool,
        score_spec_heldout,
        search_candidates,
    )
    from sopgraph.tools.toolmaker.session import MakeSession

    async def go() -> list[dict[str, Any]]:
        out = []
        session = MakeSession(sop_dir, lm=models.lm, judge_lm=models.judge_lm, model=models.name)
        async with session:
            with common.progress(not args.json or sys.stderr.isatty()) as bar:
                for node in nodes:
                    task = bar.add_task(f"{node}: start", total=None)

                    def stage(s: str, d: str, node=node, task=task) -> None:
                        bar.update(task, description=f"{node}: {s} {d}")
                        common.log_stage(f"{node}: {s} {d}")

                    # label-free: make_spec_tool drops the training labels before it reads
                    # a case; the held-out labels score the kept spec afterwards
                    train = node_cases(cases_dir, node, "train")
                    held_out = node_cases(cases_dir, node, "eval")
                    deps = await spec_deps(session, node, args.demos, program=args.program)
                    record = await make_spec_tool(
                        deps, train, config=args.config, samples=args.samples,
                        rounds=args.rounds, seed=args.seed, on_stage=stage,
                        extra_candidates=search_candidates(deps) if args.enumeration else None,
                        label_free=args.label_free,
                    )  # fmt: skip
                    stage("score", f"{len(held_out)} held-out cases")
                    record = await score_spec_heldout(deps, record, held_out)
                    version, kept = None, None
                    if not args.no_register and record.best and record.best.candidate.code:
                        version = register_version(record, Registry(sop_dir / "tools"), node)
                        kept = sop_dir / "tools" / node / f"v{version}.make.json"
                    else:  # nothing registered: the record is kept all the same
                        name = f"{node}.{record.config}.seed{record.seed}.{int(time.time())}"
                        kept = write_output(
                            home_dir() / "toolmaker" / f"{name}.make.json",
                            record.model_dump_json(indent=1, by_alias=True),
                        )
                    bar.update(task, description=f"{node}: done")
                    out.append(_make_row(record, version, kept))
        return out

    rows = asyncio.run(go())
    if args.json:
        print(json_text(rows))
        return 0
    for r in rows:
        print(_make_line(r, args.sop))
    return 0


def _make_row(record: Any, version: int | None, kept: Path) -> dict[str, Any]:
    best = record.best
    return {
        "node": record.node, "config": record.config, "label_free": record.label_free,
        "model": record.model, "version": version, "best_round": record.best_round,
        "rounds": len(record.rounds), "train_pass": record.train_pass,
        "eval_pass": record.eval_pass, "tokens": record.tokens, "seconds": record.seconds,
        "spec": best.candidate.spec if best else None,
        "found_by": best.found_by if best else None,
        "record": str(kept),
        "notes": record.notes,
    }  # fmt: skip


def _make_line(r: dict[str, Any], sop: str) -> str:
    ev = "-" if r["eval_pass"] is None else f"{r['eval_pass']:.0%}"
    train = "agreement with the votes" if r["label_free"] else "train"
    head = (
        f"{r['node']}: {train} {r['train_pass']:.0%} (round {r['best_round']} of "
        f"{r['rounds']}), held-out {ev}, {r['tokens']:,} tokens, {r['seconds']:.0f} s"
    )
    if r["version"] is None:
        notes = f" ({printable('; '.join(r['notes']))})" if r["notes"] else ""
        return f"{head}; not registered{notes}; record {r['record']}"
    return (
        f"{head}; registered v{r['version']} (inactive), record {r['record']}\n"
        f"  promote: sopgraph tools promote {sop} {r['node']} {r['version']}"
    )


__all__ = ["cmd_tools_make", "cmd_tools_optimize_maker", "make_parser", "register"]
