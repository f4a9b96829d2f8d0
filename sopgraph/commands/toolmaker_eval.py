"""``sopgraph eval toolmaker``: held-out pass@1 of the spec tool-maker on an SOP's nodes,
beside the LLM-free search and the majority verdict; records, a JSON summary and a report."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from sopgraph.arguments import positive_int, subcommands
from sopgraph.commands import toolmaker_common as common
from sopgraph.errors import UserError
from sopgraph.output_file import write_output


def cmd_eval_toolmaker(args: argparse.Namespace) -> int:
    from sopgraph.evals.toolmaker_eval import NODE_SET, eval_spec_toolmaker
    from sopgraph.evals.toolmaker_report import dump, render_report, sampling_speed, summarize
    from sopgraph.tools.toolmaker.session import MakeSession

    sop_dir = common.sop_dir_of(args.sop)
    configs = common.split_list(args.configs) or ["sop", "sop+d+r"]
    common.check_rounds(args.rounds)
    if bad := [c for c in configs if c not in common.CONFIGS]:
        raise UserError(f"--configs: {', '.join(bad)} unknown; use {', '.join(common.CONFIGS)}")
    try:
        seeds = [int(s) for s in common.split_list(args.seeds)] or [0]
    except ValueError:
        raise UserError(f"--seeds {args.seeds}: give comma-separated whole numbers") from None
    cases_dir = common.cases_dir_of(args.cases, sop_dir)
    nodes = common.decision_nodes(sop_dir, common.split_list(args.nodes) or NODE_SET, cases_dir)
    program = common.check_program(args.program)
    models = common.maker_models()
    out_dir = Path(args.out)
    if out_dir.exists() and not out_dir.is_dir():
        raise UserError(f"--out {args.out}: is a file; give a folder for the records")
    import os

    # fill replays what an interrupted live run already recorded and asks the model the rest
    live = not os.environ.get("SOPGRAPH_CASSETTE") or os.environ.get(
        "SOPGRAPH_CASSETTE_MODE", "replay"
    ) in ("record", "fill")

    async def go() -> list[dict[str, Any]]:
        session = MakeSession(sop_dir, lm=models.lm, judge_lm=models.judge_lm, model=models.name)
        async with session:
            with common.progress(not args.json or sys.stderr.isatty()) as bar:
                task = bar.add_task("start", total=None)

                def stage(config: str, node: str, s: str, d: str) -> None:
                    bar.update(task, description=f"[{config}] {node}: {s} {d}")
                    common.log_stage(f"[{config}] {node}: {s} {d}")

                def partial(rows: list[dict[str, Any]]) -> None:
                    write_output(out_dir / "summary.json", dump(summarize(rows, models.name, live)))

                return await eval_spec_toolmaker(
                    session, cases_dir, nodes, configs, seeds, samples=args.samples,
                    rounds=args.rounds, train_limit=args.train_cases, demos_from=args.demos,
                    baseline=not args.no_baseline, with_enumeration=args.enumeration,
                    label_free=args.label_free, program=args.program,
                    out_dir=out_dir / "records", on_stage=stage, on_row=partial,
                )  # fmt: skip

    rows = asyncio.run(go())
    summary = summarize(rows, models.name, live)
    write_output(out_dir / "summary.json", dump(summary))
    report = write_output(out_dir / "report.md", render_report(summary))
    registered = _register_into(args, configs, out_dir, sop_dir) if args.register_into else []
    if args.json:
        summary["registered"] = registered
        print(dump(summary))
        return 0
    mode = "live" if live else "replayed/scripted (not live)"
    print(f"tool-maker eval, model {models.name} ({mode}); records and report in {out_dir}")
    print(f"tool-maker program: {program or 'zero-shot (no optimized program)'}")
    for name, c in summary["configs"].items():
        print(
            f"{name}: held-out pass@1 {c['pass_at_1']:.0%} ({len(c['nodes_passed'])} of "
            f"{c['makes']} makes), {c['tokens_per_node']:,} tokens and "
            f"{c['seconds_per_node']:.0f} s per node, {c['minutes_total']:.1f} min in all"
            + (
                f", kept candidate from the search in {c['kept_from_search']}"
                if c["kept_from_search"]
                else ""
            )
        )
    for r in rows:
        ev = "-" if r["eval_pass"] is None else f"{r['eval_pass']:.0%}"
        mark = "PASS" if r["passed"] else "fail"
        print(
            f"  {mark} [{r['config']} s{r['seed']}] {r['node']}: held-out {ev}, "
            f"train {r['train_pass']:.0%}, {r['tokens']:,} tok, {r['seconds']:.0f} s"
            + (f"  ({'; '.join(r['notes'])[:160]})" if r["notes"] and not r["passed"] else "")
        )
        if r.get("vs_library"):
            print(f"       vs the library's spec: {'; '.join(r['vs_library'])[:300]}")
    print(f"report: {report}")
    speed = sampling_speed(out_dir / "records")
    if speed:
        print(
            f"sampling: {speed['samples']:g} samples from one prompt took "
            f"{speed['all_samples_s']:.0f} s against {speed['one_sample_s']:.0f} s for one "
            f"({speed['cost_ratio']:.1f}x the time; {speed['all_samples_out_tok_s']:.1f} against "
            f"{speed['one_sample_out_tok_s']:.1f} generated tokens/s), mean of "
            f"{speed['nodes']} makes"
        )
    if args.register_into:
        for line in registered:
            print(f"  {line}")
        print(f"registered into {args.register_into}; score it with: sopgraph eval triage "
              f"--sop {args.register_into}")  # fmt: skip
    return 0


def _register_into(args: Any, configs: list[str], out_dir: Path, sop_dir: Path) -> list[str]:
    """Register the tools of one configuration that passed held-out into ``--register-into``."""
    from sopgraph.evals.toolmaker_eval import record_folder, register_passing

    config = args.register_config or configs[-1]
    folder = record_folder(config, args.demos, args.enumeration, args.label_free)
    return register_passing(out_dir / "records", folder, sop_dir, Path(args.register_into))


def register(sub: Any) -> None:
    """Register ``toolmaker`` under the ``eval`` command (registered before, in eval.py)."""
    p = subcommands(sub.choices["eval"]).add_parser(
        "toolmaker", help="held-out pass@1 of the tool-making pipeline"
    )
    p.add_argument("sop", help="SOP file or folder")
    p.add_argument("--nodes", help="comma-separated node ids (default: the fixed node set)")
    p.add_argument("--configs", help="comma-separated, default sop,sop+d+r; " + common.CONFIG_HELP)
    p.add_argument("--seeds", default="0", help="comma-separated seeds (default 0)")
    common.spec_options(p)
    p.add_argument("--train-cases", type=positive_int, help="use N training cases a node")
    p.add_argument("--no-baseline", action="store_true", help="skip the LLM-free search")
    p.add_argument("--out", default=".sopgraph/toolmaker_eval", help="records, JSON and report")
    p.add_argument(
        "--register-into", metavar="DIR",
        help="copy the SOP folder to DIR (once) and register there, promoted, every tool that "
        "passed its held-out cases (as tool-maker:<model>)",
    )  # fmt: skip
    p.add_argument("--register-config", help="which config's tools to register (default the last)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(fn=cmd_eval_toolmaker)
