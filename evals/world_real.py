"""The triage SOP on the real data stack beside the simulated servers, in one run.

Real: the robotics metrics backfilled into a stock Prometheus and read through
``prometheus-mcp-server`` from PyPI (``world_real_stack``); the simulated servers are the
SOP's own ``mcp.json``. Both run the same compiled tools on the same labeled cases
(``eval_tools``) and the same alarms (``eval_triage``); this prints, per stack, nodes passed,
nodes verdict-identical to the simulated servers, triage accuracy and seconds per alarm.

Run: ``python -m sopgraph.evals.world_real [--alarms N] [--json]`` (``make world-real``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from sopgraph.evals.fc_triage.build import WorldPaths, build_world
from sopgraph.evals.fc_triage.dataset import load_scenarios
from sopgraph.evals.pg_cluster import PostgresMissing
from sopgraph.evals.tool_eval import NodeResult, eval_tools
from sopgraph.evals.triage_eval import AlarmOutcome, eval_triage
from sopgraph.evals.world_real_checks import (
    explain,
    missing_metrics,
    postgres_dsns,
    postgres_reachable,
    reachable,
)
from sopgraph.evals.world_real_stack import PrometheusProcess, StackError, real_sop
from sopgraph.examples import EXAMPLES
from sopgraph.graphs.home import home_dir
from sopgraph.mcp_servers.prometheus_backfill import BackfillError, backfill
from sopgraph.nodes.mcp import McpPool, load_server_configs

TRIAGE_SOP = EXAMPLES / "fc_alarm_triage"


def blocks_for(robotics_db: Path) -> Path:
    """The TSDB blocks of ``robotics_db``, backfilled once beside it (again when it changes)."""
    out = robotics_db.with_name("prometheus_blocks")
    stamp = out / ".source"
    want = f"{robotics_db.stat().st_size}:{robotics_db.stat().st_mtime_ns}"
    if not (stamp.is_file() and stamp.read_text() == want):
        backfill(robotics_db, out)
        stamp.write_text(want)
    return out


@contextmanager
def real_stack(sop_dir: Path, paths: WorldPaths, workdir: Path, postgres: bool = True):
    """Prometheus over the backfilled world and, with ``postgres``, the conveyance and ops
    tables in a throwaway PostgreSQL cluster; yields the SOP copy that reads them, and
    Prometheus."""
    from sopgraph.evals.pg_cluster import PgCluster
    from sopgraph.evals.world_real_pg import load_world_tables

    cluster = PgCluster(database="conveyance") if postgres else nullcontext()
    with PrometheusProcess(blocks_for(paths.robotics), workdir) as prom, cluster as pg:
        dsns = load_world_tables(paths, pg) if pg is not None else None
        yield real_sop(sop_dir, workdir / "sop", prom.url, postgres=dsns), prom


async def preflight(real_dir: Path, url: str) -> None:
    """Refuse, in one line, a Prometheus that does not answer or lacks a metric the specs read."""
    why = reachable(url)
    if why is not None:
        raise StackError(
            f"Prometheus at {url} is not reachable ({why}); start it, or point PROMETHEUS_URL "
            f"in {real_dir / 'mcp.json'} at a running one"
        )
    for server, dsn in postgres_dsns(real_dir / "mcp.json").items():
        why = postgres_reachable(dsn)
        if why is not None:
            raise StackError(
                f"PostgreSQL at {dsn} (the {server} server) is not reachable ({why}); start it, "
                f"or point the {server} server's --dsn in {real_dir / 'mcp.json'} at a running one"
            )
    async with McpPool(load_server_configs(real_dir)) as mcp:
        listed = (await mcp.call("robotics", "list_metrics", {}))["metrics"]
    missing = missing_metrics(real_dir, listed, url)
    if missing:
        raise StackError(
            missing[0] + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
        )


def errors_of(results: list[NodeResult], url: str, mcp_json: Path) -> list[str]:
    """The distinct errors of the real stack's cases, one line each."""
    return sorted({explain(f.error, url, mcp_json) for r in results for f in r.failures if f.error})


def _failures(r: NodeResult) -> set[tuple]:
    return {(f.site, f.timestamp, f.got, f.error is not None) for f in r.failures}


def node_agreement(sim: list[NodeResult], real: list[NodeResult]) -> dict[str, Any]:
    """Nodes whose real-stack verdicts are the simulated ones on every case (same cases right,
    same wrong verdicts), and each stack's nodes passed."""
    by_node = {r.node: r for r in sim}
    identical = [
        r.node
        for r in real
        if r.node in by_node
        and r.correct == by_node[r.node].correct
        and _failures(r) == _failures(by_node[r.node])
    ]
    return {
        "nodes": len(real),
        "identical": len(identical),
        "different": sorted({r.node for r in real} - set(identical)),
        "sim_passed": sum(r.passed for r in sim),
        "real_passed": sum(r.passed for r in real),
        "real_failures": {
            r.node: [f.model_dump() for f in r.failures[:3]] for r in real if r.failures or r.error
        },
    }


def _seconds(outcomes: list[AlarmOutcome]) -> dict[str, float]:
    ms = sorted(o.ms for o in outcomes)
    if not ms:
        return {"p50_s": 0.0, "p99_s": 0.0}
    p99 = ms[min(len(ms) - 1, int(round(0.99 * (len(ms) - 1))))]
    return {"p50_s": round(statistics.median(ms) / 1000, 4), "p99_s": round(p99 / 1000, 4)}


def triage_figures(sim: list[AlarmOutcome], real: list[AlarmOutcome]) -> dict[str, Any]:
    """Accuracy, per-alarm agreement and seconds per alarm of both stacks."""
    same = {o.alarm_id: (o.path, o.root_causes, o.actions) for o in sim}
    agree = sum(same.get(o.alarm_id) == (o.path, o.root_causes, o.actions) for o in real)
    n = len(real)
    return {
        "alarms": n,
        "sim": {"accuracy": round(sum(o.correct for o in sim) / n, 4) if n else 0.0}
        | _seconds(sim),
        "real": {"accuracy": round(sum(o.correct for o in real) / n, 4) if n else 0.0}
        | _seconds(real),
        "same_path_and_actions": agree,
        "real_wrong": [{"alarm_id": o.alarm_id, "diff": o.diff} for o in real if not o.correct][
            :10
        ],
    }


async def compare(
    sop_dir: Path,
    real_dir: Path,
    cases_dir: Path,
    scenarios: list,
    *,
    url: str,
    split: str = "eval",
    nodes: list[str] | None = None,
    concurrency: int = 4,
) -> dict[str, Any]:
    """Labeled cases and alarms through the simulated SOP and its real-stack copy."""
    await preflight(real_dir, url)
    t0 = time.perf_counter()
    sim_nodes = await eval_tools(sop_dir, cases_dir, split, nodes, concurrency=8)
    real_nodes = await eval_tools(real_dir, cases_dir, split, nodes, concurrency=8)
    t1 = time.perf_counter()
    sim_alarms = await eval_triage(sop_dir, scenarios, concurrency=concurrency)
    real_alarms = await eval_triage(real_dir, scenarios, concurrency=concurrency)
    return {
        "split": split,
        "tools": node_agreement(sim_nodes, real_nodes)
        | {
            "seconds": round(t1 - t0, 1),
            "errors": errors_of(real_nodes, url, real_dir / "mcp.json"),
        },
        "triage": triage_figures(sim_alarms, real_alarms)
        | {"seconds": round(time.perf_counter() - t1, 1)},
    }


def render(summary: dict[str, Any]) -> str:
    t, a = summary["tools"], summary["triage"]
    lines = [
        f"labeled cases ({summary['split']}): {t['identical']}/{t['nodes']} nodes verdict-identical "
        f"to the simulated servers; passed: simulated {t['sim_passed']}/{t['nodes']}, "
        f"real {t['real_passed']}/{t['nodes']} ({t['seconds']} s)",
        f"triage, {a['alarms']} alarms ({a['seconds']} s):",
        f"  {'stack':<10} {'accuracy':>8} {'p50 s':>8} {'p99 s':>8}",
    ]
    for name in ("sim", "real"):
        s = a[name]
        lines.append(f"  {name:<10} {s['accuracy']:>8} {s['p50_s']:>8} {s['p99_s']:>8}")
    lines.append(
        f"  same path, root causes and actions on {a['same_path_and_actions']}/{a['alarms']}"
    )
    for line in t["errors"]:
        lines.append(f"  error: {line}")
    for node in t["different"]:
        lines.append(f"  different: {node}: {json.dumps(t['real_failures'].get(node, []))[:300]}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("train", "eval"), default="eval")
    ap.add_argument("--alarms", type=int, default=None, help="first N alarms (default: all)")
    ap.add_argument("--nodes", default=None, help="comma-separated node ids (default: all)")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument(
        "--no-postgres",
        action="store_true",
        help="keep the simulated SQL servers (default: the tables in PostgreSQL)",
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    paths = build_world(home_dir(), progress=sys.stderr.isatty())
    scenarios = load_scenarios(paths.scenarios, split=args.split)[: args.alarms or None]
    nodes = [n for n in args.nodes.split(",") if n] if args.nodes else None
    try:
        with tempfile.TemporaryDirectory(prefix="world-real-") as tmp:
            with real_stack(TRIAGE_SOP, paths, Path(tmp), not args.no_postgres) as (
                real_dir,
                prom,
            ):
                summary = asyncio.run(
                    compare(
                        TRIAGE_SOP,
                        real_dir,
                        paths.cases,
                        scenarios,
                        url=prom.url,
                        split=args.split,
                        nodes=nodes,
                        concurrency=args.concurrency,
                    )
                )
    except (StackError, BackfillError, PostgresMissing) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=2) if args.json else render(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
