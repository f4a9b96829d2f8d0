"""CLI commands for the model: ``model install`` assembles the local GGUF, the others measure the model's LLM paths."""

from __future__ import annotations

import argparse
import json
from typing import Any

from sopgraph.cli_eval import TRIAGE_SOP, positive_int


def _source() -> dict[str, Any]:
    """How the model answered in this process: live requests, cassette replays, misses."""
    from sopgraph.nodes.local_llm import running_fronts

    exchanges = [e for f in running_fronts() for e in f.exchanges if e.path != "/models"]
    return {
        "live_requests": sum(e.source == "live" for e in exchanges),
        "replayed_requests": sum(e.source == "cassette" for e in exchanges),
        "cassette_misses": sum(e.source == "miss" for e in exchanges),
    }


def _print(summary: dict[str, Any], as_json: bool) -> None:
    from sopgraph.nodes.settings import Settings

    summary = {"model": Settings().model, **summary, **_source()}
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    for key, value in summary.items():
        if not isinstance(value, list):
            print(f"{key}: {json.dumps(value) if isinstance(value, dict) else value}")


def cmd_install(args: argparse.Namespace) -> int:
    from sopgraph.nodes.model_file import QWEN, assemble

    path = assemble()
    print(f"ok: {path} ({QWEN.size:,} bytes, sha256 {QWEN.sha256[:16]}…, {QWEN.license})")
    return 0


def cmd_triage(args: argparse.Namespace) -> int:
    from sopgraph.cli_eval import _models, _scenarios, _world
    from sopgraph.evals.model_triage import covering_sample, run_model_triage

    models = _models(args.arch)
    sample = covering_sample(_scenarios(_world(), args.split, None), args.alarms)
    summary = run_model_triage(TRIAGE_SOP, sample, arch=args.arch, model=models.chat,
                               lm=models.lm)  # fmt: skip
    _print(summary, args.json)
    return 0


def add_commands(sub: Any) -> None:
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
    t.add_argument("--split", choices=["train", "eval", "all"], default="eval", help="default eval")
    t.add_argument("--arch", choices=["subagent", "codeact"], default="codeact")
    t.add_argument("--json", action="store_true", help="print the figures as JSON")
    t.set_defaults(fn=cmd_triage)
