"""Durable runs on SQLite and Postgres under LangGraph's own durability modes and sopgraph's node
journal, side by side in one process: alarms a second of each beside in-memory checkpoints.

Each configuration is a ``Session`` on the triage SOP sharing one MCP pool, so the only
difference is how runs are checkpointed. The alarms run in chunks, each chunk through every
configuration in an order that rotates, so drifting load hits all of them alike; the figure is
each configuration's alarms a second over the in-memory one's (``vs_memory``).

What each one keeps when a worker is killed mid-run (LangGraph's ``durability`` docs, and
sopgraph's journal, ``runtime/journal.py``):

- ``sync``: a checkpoint is written before the next superstep starts: a continued run repeats
  no completed superstep.
- ``async``: checkpoints are written while the next superstep runs: a kill can lose the last
  ones, and a continued run repeats those supersteps' nodes.
- ``exit``: one checkpoint when the invocation ends or pauses: a killed run starts over.
- ``journal`` (SQLite, sopgraph's default there): each node's result is on file before the next
  node starts, checkpoint at the invocation's end: a continued run repeats no completed node.

Run: ``python -m sopgraph.evals.bench_durability [--alarms 200] [--postgres DSN] [--json]``
(without ``--postgres``, a throwaway PostgreSQL cluster from Debian's packages).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from contextlib import AsyncExitStack, nullcontext
from pathlib import Path
from typing import Any

from sopgraph.evals.bench_triage import _batch
from sopgraph.evals.fc_triage.build import build_world
from sopgraph.evals.fc_triage.dataset import load_scenarios
from sopgraph.examples import EXAMPLES
from sopgraph.graphs.home import home_dir
from sopgraph.runtime.runner import Session

SOP = EXAMPLES / "fc_alarm_triage"
# name -> (store, LangGraph durability, node journal); the store's default is marked in render
CONFIGS: dict[str, tuple[str, str | None, bool]] = {
    "memory": ("memory", None, False),
    "sqlite journal": ("sqlite", None, True),
    "sqlite sync": ("sqlite", "sync", False),
    "sqlite async": ("sqlite", "async", False),
    "sqlite exit": ("sqlite", "exit", False),
    "postgres sync": ("postgres", None, False),
    "postgres async": ("postgres", "async", False),
    "postgres exit": ("postgres", "exit", False),
}
KEEPS = {
    None: "nothing (in memory)",
    "journal": "every completed node",
    "sync": "every completed superstep",
    "async": "all but the last supersteps",
    "exit": "nothing of a killed invocation",
}


async def measure(
    scenarios: list[Any], stores: dict[str, str], concurrency: int, chunk: int, tmp: Path
) -> dict[str, Any]:
    """Alarms a second of each configuration, its chunks interleaved with the others'."""
    log = tmp / "invocations.sqlite"
    walls = dict.fromkeys(CONFIGS, 0.0)
    async with AsyncExitStack() as stack:
        sessions: dict[str, Session] = {}
        pool = None
        for name, (store, mode, journal) in CONFIGS.items():
            checkpoint = stores[store] if store != "sqlite" else str(tmp / f"{name}.sqlite")
            sessions[name] = await stack.enter_async_context(
                Session(SOP, checkpoint=checkpoint, approval="approve", log_path=log,
                        mcp_pool=pool, journal=journal, durability=mode)
            )  # fmt: skip
            pool = pool or sessions[name].pool
        for s in sessions.values():  # warm: each store's tables and the servers' caches
            await _batch(s, scenarios[:chunk], concurrency)
        order = list(CONFIGS)
        for k, lo in enumerate(range(0, len(scenarios), chunk)):
            part = scenarios[lo : lo + chunk]
            for name in order[k % len(order) :] + order[: k % len(order)]:
                start = time.perf_counter()
                await _batch(sessions[name], part, concurrency)
                walls[name] += time.perf_counter() - start
            print(f"  chunk {k + 1}: {lo + len(part)}/{len(scenarios)} alarms", file=sys.stderr)
    n = len(scenarios)
    memory = n / walls["memory"]
    out = {}
    for name, (store, mode, journal) in CONFIGS.items():
        aps = n / walls[name]
        kept = "journal" if journal else (mode or ("sync" if store != "memory" else None))
        out[name] = {"alarms_per_s": round(aps, 1), "vs_memory": round(aps / memory, 3),
                     "a_killed_run_keeps": KEEPS[kept]}  # fmt: skip
    return out


def render(summary: dict[str, Any]) -> str:
    lines = [
        f"durable runs, {summary['alarms']} alarms, concurrency {summary['concurrency']}, "
        f"load average {summary['load_start']} at the start",
        f"{'configuration':<16} {'alarms/s':>9} {'vs memory':>10}  a killed run keeps",
    ]
    for name, f in summary["configs"].items():
        lines.append(
            f"{name:<16} {f['alarms_per_s']:>9} {f['vs_memory']:>10}  {f['a_killed_run_keeps']}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--alarms", type=int, default=200, help="held-out alarms (default 200)")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--chunk", type=int, default=20, help="alarms a chunk (default 20)")
    ap.add_argument("--postgres", default=None, help="a Postgres DSN (default: a throwaway one)")
    ap.add_argument("--days", type=int, default=None, help="a smaller world (default: 28 days)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from sopgraph.evals.pg_cluster import PgCluster, PostgresMissing

    small = {"days": args.days, "scenarios": 60} if args.days else {}
    paths = build_world(home_dir(), progress=sys.stderr.isatty(), **small)
    scenarios = load_scenarios(paths.scenarios, split="eval")[: args.alarms]
    load = round(os.getloadavg()[0], 2)
    try:
        cluster = nullcontext() if args.postgres else PgCluster(database="bench")
        with cluster as pg, tempfile.TemporaryDirectory(prefix="bench-durability-") as tmp:
            stores = {"memory": "memory", "postgres": args.postgres or pg.dsn}
            configs = asyncio.run(
                measure(scenarios, stores, args.concurrency, args.chunk, Path(tmp))
            )
    except PostgresMissing as exc:
        print(f"error: {exc}; or give --postgres DSN", file=sys.stderr)
        return 2
    summary = {"alarms": len(scenarios), "concurrency": args.concurrency, "load_start": load,
               "configs": configs}  # fmt: skip
    print(json.dumps(summary, indent=2) if args.json else render(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
