"""The queue's claim on a thread (``runtime/thread_lock.py``): a worker whose heartbeat is late
has its job put back and taken by another while it still runs it; the thread's advisory lock
keeps the second worker off the thread, and the run completes exactly once whether the first
worker finishes it or dies in it.

The tools log ``start``/``end <node> <pid>`` to a file; ``check`` waits while the file named by
``HOLD`` exists, so the test decides when the first worker's run may go on.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from kill_resume import stop
from pg_fixture import pg_dsn  # noqa: F401 - the fixture
from sop_factory import VALVE_SOP, make_sop

from sopgraph.runtime.queue import ensure_schema, job_counts, serve, submit
from sopgraph.runtime.runs import read_run
from sopgraph.runtime.thread_lock import ThreadBusy, ThreadLocks

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[2]
TOOL = """
with open(os.environ["EXEC_LOG"], "a") as out:
    out.write(f"start {ctx.node_id} {os.getpid()}\\n")
while ctx.node_id == "check" and os.path.exists(os.environ["HOLD"]):
    await asyncio.sleep(0.05)
with open(os.environ["EXEC_LOG"], "a") as out:
    out.write(f"end {ctx.node_id} {os.getpid()}\\n")
return Verdict(value=True)
"""
BUSY = "is being run by another worker"


@pytest.fixture
def sop(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("EXEC_LOG", str(tmp_path / "executions.log"))
    monkeypatch.setenv("HOLD", str(tmp_path / "hold"))
    monkeypatch.delenv("SOPGRAPH_MODEL", raising=False)
    (tmp_path / "hold").touch()
    return make_sop(tmp_path / "sop", VALVE_SOP, {"check": TOOL, "open_valve": TOOL})


@pytest.fixture
async def queue(pg_dsn: str):  # noqa: F811
    """``pg_dsn`` with no jobs and no workers on its queue, before and after the test."""

    def empty() -> None:
        with psycopg.connect(pg_dsn) as conn:
            conn.execute("DELETE FROM procrastinate_jobs")
            conn.execute("DELETE FROM procrastinate_workers")

    await ensure_schema(pg_dsn)
    empty()
    yield pg_dsn
    empty()


def _log(sop: Path) -> list[list[str]]:
    path = Path(os.environ["EXEC_LOG"])
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


async def _until(what: str, check, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


def _refusals(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if BUSY in r.getMessage()]


def _attempts(dsn: str, job_id: int) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT attempts FROM procrastinate_jobs WHERE id = %s", (job_id,))
        return row.fetchone()[0]


# the second worker: beats often and takes a worker silent for a second for dead
TAKER = {"approval": "approve", "heartbeat_s": 0.2, "stalled_after_s": 1.0, "busy_retry_s": 0.3}


async def test_a_worker_whose_heartbeat_is_late_keeps_its_thread_and_finishes_it(
    sop, queue, caplog
):
    caplog.set_level(logging.INFO)
    (job,) = await submit(queue, sop, [{}], approval="approve", thread_ids=["late-1"])
    # the holder beats once a minute: to the others, it looks dead a second after it starts
    holder = asyncio.create_task(
        serve(queue, approval="approve", heartbeat_s=60, stalled_after_s=600, until_idle=True)
    )
    await _until("the holder started check", lambda: ["start", "check"] in
                 [line[:2] for line in _log(sop)])  # fmt: skip
    taker = asyncio.create_task(serve(queue, **TAKER))
    try:
        # the taker puts the job back as stalled, takes it, finds the thread held: refused
        await _until("two refusals", lambda: len(_refusals(caplog)) >= 2)
        assert [line[:2] for line in _log(sop)] == [["start", "check"]]  # nothing run twice
        Path(os.environ["HOLD"]).unlink()  # the holder's run goes on, and ends
        await asyncio.wait_for(holder, 60)
        counts = await job_counts(queue)
        assert counts == {"succeeded": 1}, counts
        await asyncio.sleep(1.0)  # the taker, were it to run it again, would by now
    finally:
        taker.cancel()
        await asyncio.gather(taker, return_exceptions=True)

    assert [line[:2] for line in _log(sop)] == [
        ["start", "check"], ["end", "check"], ["start", "open_valve"], ["end", "open_valve"],
    ]  # fmt: skip
    assert _attempts(queue, job.job_id) >= 1  # it was put back while its run went on
    assert await job_counts(queue) == {"succeeded": 1}
    run = read_run(queue, "late-1")
    assert run.status == "finished" and run.result.path == ["check", "open_valve"]
    (action,) = run.result.actions
    assert action["status"] == "executed"


async def test_a_holder_that_dies_frees_its_thread_and_the_run_completes_once(sop, queue, caplog):
    caplog.set_level(logging.INFO)
    (job,) = await submit(queue, sop, [{}], approval="approve", thread_ids=["late-2"])
    cmd = [sys.executable, "-m", "sopgraph", "queue", "worker", "--store", queue,
           "--approval", "approve", "--heartbeat", "60", "--stalled-after", "600"]  # fmt: skip
    holder = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    taker = None
    try:
        await _until("the holder started check", lambda: ["start", "check", str(holder.pid)]
                     in _log(sop), 90)  # fmt: skip
        taker = asyncio.create_task(serve(queue, **TAKER))
        await _until("two refusals", lambda: len(_refusals(caplog)) >= 2)
        assert _log(sop) == [["start", "check", str(holder.pid)]]
        os.kill(holder.pid, signal.SIGKILL)  # mid-node: its connections close, its lock goes
        holder.wait()
        Path(os.environ["HOLD"]).unlink()
        deadline = time.monotonic() + 60
        while await job_counts(queue) != {"succeeded": 1}:
            assert time.monotonic() < deadline, "the run was not finished after the kill"
            await asyncio.sleep(0.1)
    finally:
        stop(holder)
        if taker is not None:
            taker.cancel()
            await asyncio.gather(taker, return_exceptions=True)

    me = str(os.getpid())
    assert _log(sop) == [
        ["start", "check", str(holder.pid)],  # cut short by the kill, not saved
        ["start", "check", me], ["end", "check", me],  # run again, after the holder died
        ["start", "open_valve", me], ["end", "open_valve", me],
    ]  # fmt: skip
    run = read_run(queue, "late-2")
    assert run.status == "finished" and run.result.path == ["check", "open_valve"]


async def test_a_thread_lock_is_one_holder_and_freed_when_its_connection_dies(queue):
    async with ThreadLocks(queue, size=2) as one, ThreadLocks(queue, size=2) as two:
        async with one.hold("t-1"):
            with pytest.raises(ThreadBusy, match="thread t-1 is being run by another worker"):
                async with two.hold("t-1"):
                    pytest.fail("two workers held one thread")
            async with two.hold("t-2"):  # another thread is not held up
                pass
        async with two.hold("t-1"):  # let go at the end of the block
            pass
        held = asyncio.Event()
        release = asyncio.Event()

        async def hold_until_released() -> None:
            async with one.hold("t-3"):
                held.set()
                await release.wait()

        holding = asyncio.create_task(hold_until_released())
        await held.wait()
        with psycopg.connect(queue, autocommit=True) as admin:  # the holder's backend ends
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' "
                "AND granted AND pid <> pg_backend_pid()"
            )
        await asyncio.sleep(0.2)
        async with two.hold("t-3"):  # the dead connection's lock is gone
            pass
        release.set()
        await holding  # the holder's unlock finds its connection gone: a warning, no error
