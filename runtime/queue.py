"""Runs spread over worker processes by procrastinate, a job queue kept in the checkpoint
store's own Postgres database: a team that runs sopgraph durably has its broker already.

A job is one input of one SOP on a thread id chosen when it is submitted. Each worker process
holds a warm ``Session`` per SOP (its MCP servers started once) on the shared Postgres
checkpoint store. Workers take jobs with ``FOR UPDATE SKIP LOCKED`` and beat a heartbeat; a
worker whose heartbeat stops (killed, its machine gone) has its jobs put back by the others
(``redeliver_stalled``), and the next worker to take one continues the thread from its last
checkpoint: finished nodes are not run again, a finished run is returned as stored, and a
gated action run again carries the same idempotency key (``graphs/idempotency.py``).

A heartbeat that is only late puts back the job of a worker still running it; the thread's
advisory lock (``runtime/thread_lock.py``), held for the whole run, keeps the second worker
off the thread: it puts the job back for later instead (``ThreadBusy``), and whoever takes it
once the holder is done or dead continues it from its checkpoint.

Example:
    >>> jobs = await submit(dsn, "examples/fc_alarm_triage", inputs, approval="approve")
    >>> await serve(dsn, concurrency=8)  # in each worker process: `sopgraph queue worker`
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import psycopg
from procrastinate import App, BaseRetryStrategy, JobContext, PsycopgConnector, RetryStrategy
from procrastinate.exceptions import ConnectorException
from procrastinate.jobs import Job
from procrastinate.manager import JobManager
from procrastinate.retry import RetryDecision
from procrastinate.schema import SchemaManager
from pydantic import BaseModel

from sopgraph.graphs.loader import load_sop
from sopgraph.runtime.resume import within_policy
from sopgraph.runtime.runner import Session, check_input, new_thread_id
from sopgraph.runtime.thread_lock import ThreadBusy, ThreadLocks

QUEUE = "sopgraph"  # the procrastinate queue the runs go through
TASK = "sopgraph.run_input"
SCHEMA_LOCK = 0x736F_7067  # advisory lock held while one process creates the queue's tables
CONNECT_TIMEOUT_S = 5
HEARTBEAT_S = 10.0  # procrastinate's default: a worker's heartbeat, every this many seconds
STALLED_AFTER_S = 30.0  # no heartbeat for this long: the worker's jobs are put back
BUSY_RETRY_S = 2.0  # a run whose thread another worker holds is tried again this much later
FINISHED = ("succeeded", "failed", "cancelled", "aborted")  # the job statuses prune removes
# a run that failed on the store or the network is tried again; it continues where it stopped
RETRY = RetryStrategy(
    max_attempts=5, exponential_wait=1, retry_exceptions=[OSError, psycopg.OperationalError]
)

log = logging.getLogger(__name__)


class QueueError(Exception):
    """The job queue's database cannot be reached or used; ``str`` says where and how to fix."""


class Submitted(BaseModel):
    """A run put on the queue: its thread id (the run id in the store) and its job."""

    thread_id: str
    job_id: int


def store_name(dsn: str) -> str:
    """``dsn`` as it may be printed: without its password."""
    from sopgraph.runtime.runs import store_name as without_password

    return without_password(dsn)


def check_dsn(dsn: str) -> None:
    """Refuse anything but a ``postgres://`` URL: the queue lives in Postgres."""
    if not str(dsn).startswith(("postgres://", "postgresql://")):
        raise QueueError(
            f"the job queue needs a postgresql:// URL (got {dsn!r}); pass the Postgres "
            "database that holds the checkpoints, e.g. postgresql://user@host:5432/sopgraph"
        )


async def ensure_schema(dsn: str) -> None:
    """Reach the database at ``dsn`` (``QueueError`` in one line if it does not answer) and
    create procrastinate's tables there unless they are there already."""
    check_dsn(dsn)

    try:
        conn = await psycopg.AsyncConnection.connect(dsn, connect_timeout=CONNECT_TIMEOUT_S)
    except psycopg.OperationalError as exc:
        # 'connection to server at "h", port 5432 failed: Connection refused' and a hint
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        first = first.rsplit("failed: ", 1)[-1].strip()
        raise QueueError(
            f"the job queue at {store_name(dsn)} is not reachable ({first}); start "
            "PostgreSQL there, or pass the URL of a running one"
        ) from None
    async with conn:
        async with conn.transaction():  # workers starting at once: one creates the tables
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            cur = await conn.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL")
            row = await cur.fetchone()
            if not (row and row[0]):
                await conn.execute(SchemaManager.get_schema())  # no parameters: sent as is


class RunRetry(BaseRetryStrategy):
    """A busy thread is tried again ``busy_s`` later, for as long as its holder runs it (it is
    not failing); any other error goes by ``RETRY``."""

    def __init__(self, busy_s: float):
        self.busy_s = busy_s

    def get_retry_decision(self, *, exception: BaseException, job: Job) -> RetryDecision | None:
        if isinstance(exception, ThreadBusy):
            return RetryDecision(retry_in={"seconds": self.busy_s})
        return RETRY.get_retry_decision(exception=exception, job=job)


def _gone(exc: ConnectorException) -> bool:
    """The job is no longer ``doing``: the worker whose heartbeat was late finished it."""
    return "Job was not found" in str(exc.__cause__)


class _Jobs(JobManager):
    """procrastinate's job manager, told that a job put back while its run went on may be
    finished by the late worker before the one that took it after: that is not an error."""

    async def finish_job(self, job: Job, status: Any, delete_job: bool) -> None:
        try:
            await super().finish_job(job, status, delete_job)
        except ConnectorException as exc:
            if not _gone(exc):
                raise
            log.info("job %s was finished by the worker that ran it", job.id)

    async def retry_job(self, job: Job, *args: Any, **kwargs: Any) -> None:
        try:
            await super().retry_job(job, *args, **kwargs)
        except ConnectorException as exc:
            if not _gone(exc):
                raise
            log.info("job %s was finished by the worker that ran it", job.id)


def queue_app(dsn: str, pool_size: int = 4, busy_retry_s: float = BUSY_RETRY_S) -> App:
    """The procrastinate app over ``dsn`` with the one task, ``run_input``."""
    connector = PsycopgConnector(
        conninfo=dsn,
        min_size=1,
        max_size=pool_size,
        kwargs={"connect_timeout": CONNECT_TIMEOUT_S},
    )
    app = App(connector=connector)
    app.job_manager = _Jobs(connector=connector)
    retry = RunRetry(busy_retry_s)
    app.task(name=TASK, queue=QUEUE, pass_context=True, retry=retry)(_run_input)
    return app


async def submit(
    dsn: str,
    sop_path: str | Path,
    inputs: list[dict[str, Any]],
    *,
    approval: str = "ask",
    approver: str | None = None,
    thread_ids: list[str] | None = None,
) -> list[Submitted]:
    """Put a run of ``sop_path`` per input on the queue, all in one transaction.

    Each input is checked against the SOP's input contract first (``InputError``): a bad
    one puts nothing on the queue. ``approval`` is the policy asked for the runs' gated
    actions; a worker cuts it down to its own (``sopgraph queue worker --approval``).
    """
    sop = load_sop(sop_path)  # the workers load it by its absolute path
    for inp in inputs:
        check_input(sop, inp)
    ids = thread_ids or [new_thread_id() for _ in inputs]
    path = str(Path(sop_path).resolve())
    await ensure_schema(dsn)
    app = queue_app(dsn, pool_size=1)
    async with app.open_async():
        args = [
            {"sop": path, "input": inp, "thread_id": t, "approval": approval,
             "approver": approver}
            for inp, t in zip(inputs, ids, strict=True)
        ]  # fmt: skip
        job_ids = await app.tasks[TASK].batch_defer_async(*args) if args else []
    return [Submitted(thread_id=t, job_id=j) for t, j in zip(ids, job_ids, strict=True)]


async def job_counts(dsn: str) -> dict[str, int]:
    """The queue's runs by job status (todo, doing, succeeded, failed, ...)."""
    await ensure_schema(dsn)

    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        cur = await conn.execute(
            "SELECT status::text, count(*) FROM procrastinate_jobs WHERE queue_name = %s "
            "GROUP BY status",
            (QUEUE,),
        )
        return {status: n for status, n in await cur.fetchall()}


class Sessions:
    """A worker process's warm sessions, one per SOP, opened at their first job and kept."""

    def __init__(self, store: str, approval: str, **session_kw: Any):
        self.store, self.approval, self.session_kw = store, approval, session_kw
        self._open: dict[str, Session] = {}
        self._lock = asyncio.Lock()  # two first jobs of one SOP at once open it once
        self._stack = AsyncExitStack()

    async def get(self, sop_path: str) -> Session:
        async with self._lock:
            if sop_path not in self._open:
                session = Session(sop_path, checkpoint=self.store, approval=self.approval,
                                  **self.session_kw)  # fmt: skip
                self._open[sop_path] = await self._stack.enter_async_context(session)
            return self._open[sop_path]

    async def __aenter__(self) -> Sessions:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()


async def _run_input(
    context: JobContext,
    sop: str,
    input: dict[str, Any],  # noqa: A002 - the job's argument, as submitted
    thread_id: str,
    approval: str = "ask",
    approver: str | None = None,
) -> str:
    """One job: run (or continue) ``thread_id`` on this worker's session for ``sop``, holding
    the thread's lock; ``ThreadBusy`` (the job goes back for later) if another worker holds it."""
    sessions: Sessions = context.additional_context["sessions"]
    locks: ThreadLocks = context.additional_context["locks"]
    session = await sessions.get(sop)
    policy = within_policy(approval, sessions.approval)
    if policy != approval:  # the worker's operator cut the submitter's policy down
        approver = f"queue worker {context.worker_name}"
    try:
        async with locks.hold(thread_id):
            result = await session.run(input, thread_id=thread_id, approval=policy,
                                       approver=approver)  # fmt: skip
    except ThreadBusy:
        log.warning("job %s: thread %s is being run by another worker; the job goes back on "
                    "the queue", context.job.id, thread_id)  # fmt: skip
        raise
    return result.status


async def redeliver_stalled(app: App, stalled_after_s: float) -> None:
    """Put back, every ``stalled_after_s / 2`` s, the jobs of workers whose heartbeat stopped
    ``stalled_after_s`` ago; the next worker to take one continues its run."""
    while True:
        await asyncio.sleep(stalled_after_s / 2)
        try:
            stalled = await app.job_manager.get_stalled_jobs(
                queue=QUEUE, seconds_since_heartbeat=stalled_after_s
            )
            for job in stalled:
                try:
                    await JobManager.retry_job(app.job_manager, job)
                except ConnectorException:  # another worker put it back first
                    continue
                log.warning("job %s (thread %s) put back: its worker stopped", job.id,
                            job.task_kwargs.get("thread_id"))  # fmt: skip
        except ConnectorException as exc:  # the database is away: try again at the next turn
            log.warning("looking for stalled jobs failed: %s", exc)


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


async def serve(
    dsn: str,
    *,
    concurrency: int = 4,
    approval: str = "ask",
    heartbeat_s: float = HEARTBEAT_S,
    stalled_after_s: float = STALLED_AFTER_S,
    until_idle: bool = False,
    warm: tuple[str | Path, ...] = (),
    busy_retry_s: float = BUSY_RETRY_S,
    **session_kw: Any,
) -> None:
    """Be one queue worker: take up to ``concurrency`` runs at once until stopped (SIGINT or
    SIGTERM: the runs in flight finish first), or with ``until_idle`` until the queue is empty.
    The sessions of the SOPs in ``warm`` open before the first job (else at their first job).

    ``approval`` is the operator's policy for gated actions: a run submitted with a policy
    that reaches further (``approve`` under ``ask``) runs under this one. A job whose thread
    another worker is running goes back on the queue for ``busy_retry_s`` seconds.
    """
    await ensure_schema(dsn)
    # the heartbeat and the fetch each take a connection, and every finishing job one
    app = queue_app(dsn, pool_size=concurrency + 2, busy_retry_s=busy_retry_s)
    async with (
        app.open_async(),
        ThreadLocks(dsn, size=concurrency) as locks,
        Sessions(dsn, approval, **session_kw) as sessions,
    ):
        for sop in warm:  # keyed as jobs name them: by absolute path
            await sessions.get(str(Path(sop).resolve()))
        redeliver = asyncio.create_task(redeliver_stalled(app, stalled_after_s))
        try:
            await app.run_worker_async(
                queues=[QUEUE],
                name=worker_name(),
                concurrency=concurrency,
                wait=not until_idle,
                additional_context={"sessions": sessions, "locks": locks},
                update_heartbeat_interval=heartbeat_s,
                stalled_worker_timeout=stalled_after_s,
                fetch_job_polling_interval=min(5.0, heartbeat_s),
            )
        finally:
            redeliver.cancel()
            await asyncio.gather(redeliver, return_exceptions=True)


class Pruned(BaseModel):
    """What ``prune`` removed: finished jobs and their events."""

    jobs: int
    events: int


async def prune(dsn: str, older_than_s: float) -> Pruned:
    """Delete the queue's finished jobs (succeeded, failed, cancelled, aborted) whose last event
    is older than ``older_than_s``, with their events; jobs to do or being done stay.

    procrastinate's own ``remove_old_jobs`` does this in whole hours and says nothing of what
    it removed; this is its query, to the second, with the counts."""
    await ensure_schema(dsn)
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        cur = await conn.execute(
            "WITH old AS (SELECT j.id FROM procrastinate_jobs j WHERE j.queue_name = %(q)s "
            "  AND j.status::text = ANY(%(finished)s) AND (SELECT max(e.at) FROM "
            "  procrastinate_events e WHERE e.job_id = j.id) < now() - make_interval("
            "  secs => %(s)s)), "
            "events AS (SELECT count(*) AS n FROM procrastinate_events "
            "  WHERE job_id IN (SELECT id FROM old)), "
            "gone AS (DELETE FROM procrastinate_jobs WHERE id IN (SELECT id FROM old) "
            "  RETURNING id) "
            "SELECT (SELECT count(*) FROM gone), (SELECT n FROM events)",
            {"q": QUEUE, "finished": list(FINISHED), "s": older_than_s},
        )
        row = await cur.fetchone()
    jobs, events = row or (0, 0)
    return Pruned(jobs=jobs, events=events)
