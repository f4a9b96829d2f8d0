"""The tool-maker's node set on the real data stack beside the simulated servers, in one run.

The same nodes, training and held-out cases, demonstrations and settings, made twice: once
over the SOP's own servers, once over the copy whose ``robotics`` server is
``prometheus-mcp-server`` in front of a stock Prometheus and whose ``conveyance`` and ``ops``
servers are ``database-mcp-postgres`` on PostgreSQL (``world_real.real_stack``). The catalog
each maker sees is read from that stack's own listing tools (``list_metrics``,
``get_metric_metadata``, ``search_objects``), so the grammar, the search's enumeration and every candidate's
execution are the real server's. Prints held-out pass@1 per stack: the LLM-free search always,
and the model's pipelines (``--configs``) when ``SOPGRAPH_MODEL`` is set.

Run: ``python -m sopgraph.evals.world_real_toolmaker [--configs sop+d+r] [--nodes ...]``
(``make world-real TOOLMAKER=1``; ``--configs none``: the search alone, no model).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sopgraph.evals.fc_triage.build import build_world
from sopgraph.evals.pg_cluster import PostgresMissing
from sopgraph.evals.toolmaker_eval import NODE_SET, eval_spec_toolmaker
from sopgraph.evals.toolmaker_report import summarize
from sopgraph.evals.world_real import TRIAGE_SOP, preflight, real_stack
from sopgraph.evals.world_real_stack import StackError
from sopgraph.graphs.home import home_dir
from sopgraph.mcp_servers.prometheus_backfill import BackfillError

STACKS = ("simulated", "real")


async def make_on(
    sop_dir: Path, cases: Path, nodes: list[str], configs: list[str], models: Any, out: Path
) -> list[dict[str, Any]]:
    """The tool-maker eval's rows for ``sop_dir``'s servers (the LLM-free search included)."""
    from sopgraph.tools.toolmaker.session import MakeSession

    lm = models.lm if models else None
    judge = models.judge_lm if models else None
    name = models.name if models else "llm-free"

    def stage(config: str, node: str, s: str, d: str) -> None:
        print(f"  [{out.name}] [{config}] {node}: {s} {d}", file=sys.stderr, flush=True)

    async with MakeSession(sop_dir, lm=lm, judge_lm=judge, model=name) as session:
        return await eval_spec_toolmaker(
            session, cases, nodes, configs, [0], with_enumeration=True,
            out_dir=out / "records", on_stage=stage,
        )  # fmt: skip


def side_by_side(rows: dict[str, list[dict[str, Any]]], model: str, live: bool) -> dict[str, Any]:
    """Per stack, the summary (pass@1 per configuration); per node, who passed on which."""
    out: dict[str, Any] = {"stacks": {}, "nodes": {}}
    for stack, mine in rows.items():
        out["stacks"][stack] = summarize(mine, model, live)["configs"]
        for r in mine:
            cell = out["nodes"].setdefault(r["node"], {}).setdefault(r["config"], {})
            cell[stack] = {"passed": r["passed"], "eval_pass": r["eval_pass"],
                           "spec": r.get("spec")}  # fmt: skip
    return out


def render(summary: dict[str, Any]) -> str:
    lines = [
        f"tool-maker node set ({len(summary['nodes'])} nodes), model {summary['model']}"
        f" ({'live' if summary['live'] else 'no model or replayed'}); simulated vs real "
        "Prometheus and PostgreSQL (prometheus-mcp-server, database-mcp-postgres)",
        f"{'config':<22} {'simulated':>14} {'real':>14}",
    ]
    sim, real = summary["stacks"]["simulated"], summary["stacks"]["real"]
    for config in sim:
        a, b = sim[config], real.get(config, {})
        cells = [
            f"{len(c.get('nodes_passed', []))}/{c.get('makes', 0)} ({c.get('pass_at_1', 0):.0%})"
            for c in (a, b)
        ]
        lines.append(f"{config:<22} {cells[0]:>14} {cells[1]:>14}")
    differ = [
        f"  {node} [{config}]: simulated {'PASS' if c['simulated']['passed'] else 'fail'}, "
        f"real {'PASS' if c['real']['passed'] else 'fail'}"
        for node, by in summary["nodes"].items()
        for config, c in by.items()
        if set(c) == set(STACKS) and c["simulated"]["passed"] != c["real"]["passed"]
    ]
    same = sum(
        set(c) == set(STACKS) and c["simulated"]["spec"] == c["real"]["spec"]
        for by in summary["nodes"].values()
        for c in by.values()
    )
    makes = sum(len(by) for by in summary["nodes"].values())
    lines.append(f"makes whose chosen spec is the same on both stacks: {same} of {makes}")
    lines.append(f"nodes whose held-out pass differs between the stacks: {len(differ)}")
    lines += differ
    lines.append(f"seconds: {summary['seconds']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", default=None, help="comma-separated node ids (default: NODE_SET)")
    ap.add_argument(
        "--configs",
        default=None,
        help="the model's pipelines, comma-separated (default: sop+d+r with SOPGRAPH_MODEL "
        "set, else none; none: the LLM-free search alone)",
    )
    ap.add_argument("--out", type=Path, default=None, help="records (default: a temp folder)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    nodes = [n for n in args.nodes.split(",") if n] if args.nodes else list(NODE_SET)
    wanted = args.configs or ("sop+d+r" if os.environ.get("SOPGRAPH_MODEL") else "none")
    configs = [] if wanted == "none" else [c for c in wanted.split(",") if c]
    models = None
    if configs:
        from sopgraph.nodes.models import Settings
        from sopgraph.tools.toolmaker.models import NO_MODEL, models_for

        settings = Settings()
        if not settings.model.strip():
            print(f"error: {NO_MODEL}; or --configs none for the search alone", file=sys.stderr)
            return 2
        models = models_for(settings)
    live = bool(models) and not (
        os.environ.get("SOPGRAPH_CASSETTE")
        and os.environ.get("SOPGRAPH_CASSETTE_MODE", "replay") not in ("record", "fill")
    )
    paths = build_world(home_dir(), progress=sys.stderr.isatty())
    rows: dict[str, list[dict[str, Any]]] = {}
    seconds: dict[str, float] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="world-real-toolmaker-") as tmp:
            out = args.out or Path(tmp) / "records"
            with real_stack(TRIAGE_SOP, paths, Path(tmp)) as (real_dir, prom):
                asyncio.run(preflight(real_dir, prom.url))
                for stack, sop_dir in (("simulated", TRIAGE_SOP), ("real", real_dir)):
                    t0 = time.perf_counter()
                    rows[stack] = asyncio.run(
                        make_on(sop_dir, paths.cases, nodes, configs, models, out / stack)
                    )
                    seconds[stack] = round(time.perf_counter() - t0, 1)
    except (StackError, BackfillError, PostgresMissing) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    summary = side_by_side(rows, models.name if models else "none", live)
    summary.update(model=models.name if models else "none", live=live, seconds=seconds)
    print(json.dumps(summary, indent=2, default=str) if args.json else render(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
