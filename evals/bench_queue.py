"""``python -m sopgraph.evals.bench_queue --store postgresql://…``: triage runs a second through
the job queue (``runtime/queue.py``) with 1, 2 and 4 worker processes, beside the same runs in
one process on the same Postgres checkpoint store, in one command.

Each configuration runs the same alarms of the simulated dock (``evals/fc_triage/dock.py``) at
the same concurrency, after a warm-up. Per configuration it prints runs a second (the queue's
from its own events: first job started to last job finished), the CPU a run costs in the
runner processes (with their MCP servers) and in Postgres, the write transactions and WAL bytes
a run costs in Postgres (``pg_current_xact_id`` and ``pg_current_wal_lsn`` before and after:
exact, where pg_stat_database's counters lag), and the queue's rows a run (jobs, events). The
queue's overhead is a queue run's cost minus an in-process run's; per-core efficiency is the
speed-up over one worker divided by the cores the workers can use (``min(workers, cores)``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg

from sopgraph.evals.bench_triage import cpu_seconds
from sopgraph.evals.fc_triage.dock import TRIAGE_SOP, first_scenarios, world
from sopgraph.runtime.queue import QUEUE, ensure_schema, store_name, submit
from sopgraph.runtime.runner import Session

READY_S = 300.0  # a worker imports, compiles and starts its MCP servers first


def _tree(pid: int) -> list[int]:
    """``pid`` and its live descendants (``/proc/<pid>/task/*/children``)."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        for task in Path(f"/proc/{p}/task").glob("*/children"):
            try:
                todo += [int(c) for c in task.read_text().split()]
            except OSError:
                continue
    return found


def _cpu(pids: list[int]) -> dict[int, float]:
    return {p: c for p in pids if (c := cpu_seconds(p)) is not None}


def _spent(before: dict[int, float], pids: list[int]) -> float:
    """CPU seconds the processes alive at both readings spent since ``before``."""
    now = _cpu(pids)
    return sum(now[p] - before[p] for p in now if p in before)


class Postgres:
    """The counters of the database at ``dsn``, and its server processes' CPU."""

    def __init__(self, dsn: str):
        self.dsn = dsn
        self.postmaster: int | None = None

    async def counters(self) -> dict[str, int]:
        async with await psycopg.AsyncConnection.connect(self.dsn, autocommit=True) as conn:
            cur = await conn.execute(
                "SELECT pg_current_xact_id()::text::bigint, "
                "pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint, "
                "(SELECT count(*) FROM procrastinate_jobs WHERE queue_name = %s), "
                "(SELECT count(*) FROM procrastinate_events), current_setting('data_directory')",
                (QUEUE,),
            )
            xid, wal, jobs, events, data = await cur.fetchone()
        if self.postmaster is None:
            try:  # the server's processes are readable when it runs on this machine
                self.postmaster = int((Path(data) / "postmaster.pid").read_text().split()[0])
            except (OSError, ValueError):
                self.postmaster = 0
        # the reading's own transaction took an xid: not the runs'
        return {"xid": xid - 1, "wal": wal, "jobs": jobs, "events": events}

    def pids(self) -> list[int]:
        return _tree(self.postmaster) if self.postmaster else []

    async def wait_workers(self, n: int, procs: list[subprocess.Popen], log: Path) -> None:
        deadline = time.monotonic() + READY_S
        while True:
            async with await psycopg.AsyncConnection.connect(self.dsn, autocommit=True) as c:
                cur = await c.execute("SELECT count(*) FROM procrastinate_workers")
                (ready,) = await cur.fetchone()
            if ready >= n:
                return
            if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
                raise RuntimeError(f"a worker did not start:\n{log.read_text()[-2000:]}")
            await asyncio.sleep(0.2)

    async def wait_done(self, job_ids: list[int]) -> float:
        """Wait for ``job_ids`` to succeed; seconds from the first start to the last finish."""
        async with await psycopg.AsyncConnection.connect(self.dsn, autocommit=True) as conn:
            while True:
                cur = await conn.execute(
                    "SELECT count(*) FILTER (WHERE status = 'succeeded'), "
                    "count(*) FILTER (WHERE status IN ('failed', 'cancelled', 'aborted')) "
                    "FROM procrastinate_jobs WHERE id = ANY(%s)",
                    (job_ids,),
                )
                done, failed = await cur.fetchone()
                if failed:
                    raise RuntimeError(f"{failed} run(s) failed on the queue")
                if done == len(job_ids):
                    break
                await asyncio.sleep(0.02)
            cur = await conn.execute(
                "SELECT extract(epoch FROM max(at) FILTER (WHERE type = 'succeeded') "
                "- min(at) FILTER (WHERE type = 'started')) FROM procrastinate_events "
                "WHERE job_id = ANY(%s)",
                (job_ids,),
            )
            (wall,) = await cur.fetchone()
        return float(wall)


def _figures(n: int, wall: float, runner_cpu: float, pg_cpu: float, d: dict[str, int]):
    return {
        "runs": n,
        "wall_s": round(wall, 2),
        "runs_per_s": round(n / wall, 1),
        "runner_cpu_ms": round(runner_cpu / n * 1000, 1),
        "postgres_cpu_ms": round(pg_cpu / n * 1000, 1),
        "write_xacts": round(d["xid"] / n, 1),
        "wal_kb": round(d["wal"] / n / 1024, 1),
        "jobs": round(d["jobs"] / n, 2),
        "events": round(d["events"] / n, 2),
    }


def _delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before[k] for k in before}


async def in_process(
    pg: Postgres, warm: list[dict], inputs: list[dict], concurrency: int, log: Path
) -> dict[str, Any]:
    """The runs in this process, ``concurrency`` at once, on one warm ``Session``."""
    async with Session(TRIAGE_SOP, checkpoint=pg.dsn, approval="approve", log_path=log) as s:
        await _gather(s, warm, concurrency)
        servers = list(s.pool.pids().values()) if s.pool is not None else []
        c0 = await pg.counters()  # first: it finds the server's processes
        cpu0, pg0, srv0 = time.process_time(), _cpu(pg.pids()), _cpu(servers)
        start = time.perf_counter()
        await _gather(s, inputs, concurrency)
        wall = time.perf_counter() - start
        runner = time.process_time() - cpu0 + _spent(srv0, servers)
        pg_cpu, c1 = _spent(pg0, pg.pids()), await pg.counters()
    return _figures(len(inputs), wall, runner, pg_cpu, _delta(c0, c1))


async def _gather(session: Session, inputs: list[dict], concurrency: int) -> None:
    sem = asyncio.Semaphore(concurrency)

    async def one(inp: dict) -> None:
        async with sem:
            result = await session.run(inp)
        if result.status not in ("done", "unresolved", "unmatched"):
            raise RuntimeError(f"a run ended {result.status}")

    await asyncio.gather(*(one(inp) for inp in inputs))


async def on_queue(
    pg: Postgres, workers: int, warm: list[dict], inputs: list[dict], concurrency: int, log: Path
) -> dict[str, Any]:
    """The runs through ``workers`` queue worker processes, ``concurrency`` runs each."""
    cmd = [sys.executable, "-m", "sopgraph", "queue", "worker", "--store", pg.dsn,
           "--concurrency", str(concurrency), "--approval", "approve",
           "--warm", str(TRIAGE_SOP)]  # fmt: skip
    with log.open("a") as out:
        procs = [subprocess.Popen(cmd, stdout=out, stderr=out, stdin=subprocess.DEVNULL)
                 for _ in range(workers)]  # fmt: skip
    try:
        await pg.wait_workers(workers, procs, log)
        await pg.wait_done([j.job_id for j in await submit(pg.dsn, TRIAGE_SOP, warm,
                                                           approval="approve")])  # fmt: skip
        tree = [p for proc in procs for p in _tree(proc.pid)]
        c0 = await pg.counters()
        cpu0, pg0 = _cpu(tree), _cpu(pg.pids())
        start = time.perf_counter()
        jobs = await submit(pg.dsn, TRIAGE_SOP, inputs, approval="approve")
        submit_s = time.perf_counter() - start
        wall = await pg.wait_done([j.job_id for j in jobs])
        runner, pg_cpu = _spent(cpu0, tree), _spent(pg0, pg.pids())
        c1 = await pg.counters()
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)  # a graceful stop unregisters the worker
        for p in procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
    figures = _figures(len(inputs), wall, runner, pg_cpu, _delta(c0, c1))
    figures["submit_ms"] = round(submit_s / len(inputs) * 1000, 2)
    return figures


async def bench(dsn: str, alarms: int, workers: list[int], concurrency: int) -> dict[str, Any]:
    """Every configuration's figures, the in-process one first."""
    await ensure_schema(dsn)
    pg = Postgres(dsn)
    scenarios = first_scenarios(world(), "all", None)
    warm_n = concurrency * max(workers) * 2
    inputs = [sc.input for sc in scenarios[warm_n : warm_n + alarms]]
    warm = [sc.input for sc in scenarios[:warm_n]]
    tmp = Path(tempfile.mkdtemp(prefix="sopgraph-bench-queue-"))
    rows = {"in-process": await in_process(pg, warm, inputs, concurrency, tmp / "calls.sqlite")}
    for w in workers:
        print(f"{w} worker(s)...", file=sys.stderr, flush=True)
        rows[f"queue, {w} worker(s)"] = await on_queue(
            pg, w, warm, inputs, concurrency, tmp / f"workers-{w}.log"
        )
    cores = os.cpu_count() or 1
    one = next((r for k, r in rows.items() if k == "queue, 1 worker(s)"), None)
    for w in workers:
        row = rows[f"queue, {w} worker(s)"]
        if one:
            row["per_core_efficiency"] = round(
                row["runs_per_s"] / one["runs_per_s"] / min(w, cores), 2
            )
    base = rows["in-process"]
    overhead = {}
    if one:
        overhead = {
            "runner_cpu_ms": round(one["runner_cpu_ms"] - base["runner_cpu_ms"], 1),
            "postgres_cpu_ms": round(one["postgres_cpu_ms"] - base["postgres_cpu_ms"], 1),
            "write_xacts": round(one["write_xacts"] - base["write_xacts"], 1),
            "wal_kb": round(one["wal_kb"] - base["wal_kb"], 1),
            "submit_ms": one["submit_ms"],
        }
    return {
        "date": time.strftime("%Y-%m-%d"),
        "store": store_name(dsn),
        "alarms": alarms,
        "warm_up": warm_n,
        "concurrency": concurrency,
        "cores": cores,
        "load_avg": round(os.getloadavg()[0], 2),
        "rows": rows,
        "queue_overhead_per_run": overhead,
    }


COLUMNS = ("runs_per_s", "per_core_efficiency", "runner_cpu_ms", "postgres_cpu_ms",
           "write_xacts", "wal_kb", "jobs", "events", "submit_ms")  # fmt: skip


def print_table(figures: dict[str, Any]) -> None:
    print(
        f"{figures['date']}: {figures['alarms']} triage runs per configuration (after "
        f"{figures['warm_up']} to warm up), {figures['concurrency']} at once per process, on "
        f"{figures['store']}; {figures['cores']} cores, load {figures['load_avg']}"
    )
    head = ["configuration", *COLUMNS]
    lines = [head] + [
        [name, *(str(row.get(c, "-")) for c in COLUMNS)] for name, row in figures["rows"].items()
    ]
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    for line in lines:
        print("  ".join(cell.rjust(w) if i else cell.ljust(w)
                        for i, (cell, w) in enumerate(zip(line, widths, strict=True))))  # fmt: skip
    over = figures["queue_overhead_per_run"]
    if over:
        print(
            f"the queue's own cost a run (1 worker minus in-process): {over['runner_cpu_ms']} ms "
            f"runner CPU, {over['postgres_cpu_ms']} ms Postgres CPU, {over['write_xacts']} "
            f"write transactions, {over['wal_kb']} KB WAL; submitting: {over['submit_ms']} ms"
        )
    print("cpu_ms: CPU a run costs (runner: its process with its MCP servers); write_xacts, "
          "wal_kb: Postgres writes a run; jobs, events: the queue's rows a run")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sopgraph.evals.bench_queue", description=__doc__)
    p.add_argument("--store", required=True, help="a Postgres database: postgresql://…")
    p.add_argument("--alarms", type=int, default=200, help="runs per configuration (200)")
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4], help="(1 2 4)")
    p.add_argument("--concurrency", type=int, default=8, help="runs at once per process (8)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = p.parse_args(argv)
    figures = asyncio.run(bench(args.store, args.alarms, sorted(args.workers), args.concurrency))
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print_table(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
