"""Runs of one SOP spread over several worker processes that share one checkpoint store.

One Python process runs LangGraph's supersteps on one core; workers multiply that. Each
worker opens its own ``Session`` (its own MCP servers) on the same durable checkpointer
(a SQLite file on this machine, Postgres across machines), so any worker, or a later
``sopgraph resume``, can continue any thread: a batch rerun with the same thread ids after a
crash returns the finished runs as stored and continues the unfinished ones.

Example:
    >>> batch = run_workers("examples/fc_alarm_triage", inputs, workers=2,
    ...                     checkpoint=".sopgraph/cp.sqlite")
    >>> batch.alarms_per_s
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import queue
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from sopgraph.runtime import eventloop
from sopgraph.runtime.runner import InputError, RunResult, Session, new_thread_id

READY_TIMEOUT_S = 300.0  # a worker imports, compiles and starts its MCP servers first


class WorkerFailed(RuntimeError):
    """A worker process could not start or stopped before finishing its share."""


class Batch(BaseModel):
    """Every run's result in input order, and the throughput once all workers were ready."""

    results: list[RunResult]
    workers: int
    wall_s: float
    cpu_s: float  # the workers' main processes, while running (their MCP servers not included)

    @property
    def alarms_per_s(self) -> float:
        return len(self.results) / self.wall_s if self.wall_s else 0.0


def run_workers(
    sop_path: str | Path,
    inputs: list[dict[str, Any]],
    *,
    workers: int,
    checkpoint: str,
    thread_ids: list[str] | None = None,
    approval: str = "approve",
    concurrency: int = 8,
) -> Batch:
    """Run ``inputs`` across ``workers`` processes (input ``i`` goes to worker ``i % workers``)."""
    if str(checkpoint) == "memory":
        raise InputError(
            "workers share the checkpoint store: pass a SQLite file or a postgres:// URL, "
            "not memory"
        )
    if workers < 1:
        raise InputError(f"workers must be at least 1 (got {workers})")
    ids = thread_ids or [new_thread_id() for _ in inputs]
    if len(ids) != len(inputs):
        raise InputError(f"{len(ids)} thread ids for {len(inputs)} inputs")
    ctx = mp.get_context("spawn")  # a forked asyncio loop and its threads are not safe to reuse
    ready = ctx.Barrier(workers + 1)
    out = ctx.Queue()
    jobs = [(i, inputs[i], ids[i]) for i in range(len(inputs))]
    procs = [
        ctx.Process(
            target=_worker,
            args=(
                str(sop_path),
                str(checkpoint),
                approval,
                concurrency,
                jobs[w::workers],
                ready,
                out,
            ),
            daemon=True,
        )
        for w in range(workers)
    ]
    for p in procs:
        p.start()
    try:
        try:
            ready.wait(READY_TIMEOUT_S)
        except threading.BrokenBarrierError:
            raise WorkerFailed(_first_error(out) or "a worker did not start in time") from None
        start = time.perf_counter()
        results: dict[int, RunResult] = {}
        cpu, finished = 0.0, 0
        while finished < workers:
            try:
                kind, a, b = out.get(timeout=1.0)
            except queue.Empty:
                if any(p.exitcode not in (None, 0) for p in procs):
                    raise WorkerFailed(_exit_codes(procs)) from None
                continue
            if kind == "result":
                results[a] = RunResult.model_validate(b)
            elif kind == "done":
                finished, cpu = finished + 1, cpu + b
            else:
                raise WorkerFailed(f"worker {a}: {b}")
        wall = time.perf_counter() - start
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    return Batch(
        results=[results[i] for i in range(len(inputs))], workers=workers, wall_s=wall, cpu_s=cpu
    )


def _worker(sop_path, checkpoint, approval, concurrency, jobs, ready, out) -> None:
    try:
        eventloop.run(_serve(sop_path, checkpoint, approval, concurrency, jobs, ready, out))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which raises it
        ready.abort()
        out.put(("error", mp.current_process().name, f"{type(exc).__name__}: {exc}"))


async def _serve(sop_path, checkpoint, approval, concurrency, jobs, ready, out) -> None:
    async with Session(sop_path, checkpoint=checkpoint, approval=approval) as session:
        eventloop.freeze_heap()
        ready.wait(READY_TIMEOUT_S)  # blocking is fine: nothing else runs yet
        sem = asyncio.Semaphore(concurrency)
        cpu0 = time.process_time()

        async def one(i: int, inp: dict[str, Any], thread_id: str) -> None:
            async with sem:
                result = await session.run(inp, thread_id=thread_id)
            out.put(("result", i, result.model_dump()))

        await asyncio.gather(*(one(*job) for job in jobs))
        out.put(("done", mp.current_process().name, time.process_time() - cpu0))


def _first_error(out: Any) -> str | None:
    try:
        while True:
            kind, who, why = out.get(timeout=1.0)
            if kind == "error":
                return f"worker {who}: {why}"
    except queue.Empty:
        return None


def _exit_codes(procs: list[Any]) -> str:
    codes = ", ".join(f"{p.name} exit {p.exitcode}" for p in procs if p.exitcode not in (None, 0))
    return f"a worker process died ({codes})"
