"""Answers to gated actions: the first answer to a pending interrupt wins, and every answer is
on record.

Before a gated action's answer drives its run, ``Session.resume`` claims the interrupt: one row
keyed on (thread, interrupt), inserted only if none is there (SQLite's and Postgres' primary
key, checked inside the database, so any number of processes answering at once leaves one
winner). Each other caller is told who answered and when, and nothing of its answer is done.
A claim is ``claimed`` while its answering process drives the run and ``finished`` once it
returned; a claim whose process is gone (killed mid-action) is taken over by the next answer
with the same decision, atomically, so a stopped resume is continued once.

Every answer, won or not, is a row of the answer log: ``accepted``, ``duplicate`` (the
interrupt was claimed by another answer), ``stale`` (it names an interrupt the run no longer
waits on), ``refused`` (the policy or the decision word refused it), ``continued`` (a stopped
resume taken over). ``sopgraph runs show`` and the console list them with the run.

The stores: the SQLite checkpoint file itself (its own connection, WAL, a busy timeout),
Postgres (the checkpoint database; ``INSERT ... ON CONFLICT DO NOTHING``), or memory (one
process: a dict under a lock).
"""

from __future__ import annotations

import asyncio
import os
import socket
import sqlite3
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sopgraph.runtime.checkpointers import schema_lock

# a claim made on another host is taken over after this long without finishing (seconds);
# on this host a claim is taken over as soon as its process is gone
LEASE_S = float(os.environ.get("SOPGRAPH_CLAIM_LEASE_S", "900"))
BUSY_TIMEOUT_MS = 30_000
OUTCOMES = ("accepted", "duplicate", "stale", "refused", "continued")

SQL = """
CREATE TABLE IF NOT EXISTS sopgraph_claims (
    thread_id TEXT NOT NULL, interrupt_id TEXT NOT NULL, node TEXT NOT NULL,
    decision TEXT NOT NULL, answered_by TEXT NOT NULL, at TEXT NOT NULL, owner TEXT NOT NULL,
    state TEXT NOT NULL, PRIMARY KEY (thread_id, interrupt_id));
CREATE TABLE IF NOT EXISTS sopgraph_answers (
    thread_id TEXT NOT NULL, interrupt_id TEXT NOT NULL, node TEXT NOT NULL,
    decision TEXT NOT NULL, answered_by TEXT NOT NULL, at TEXT NOT NULL,
    outcome TEXT NOT NULL, detail TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS sopgraph_answers_thread ON sopgraph_answers (thread_id);
"""
CLAIM_COLUMNS = "thread_id, interrupt_id, node, decision, answered_by, at, owner, state"
# the statements both databases run, with SQLite's placeholders (Postgres: ``_pg``)
HELD = f"SELECT {CLAIM_COLUMNS} FROM sopgraph_claims WHERE thread_id = ? AND interrupt_id = ?"
TAKE_OVER = (
    "UPDATE sopgraph_claims SET decision = ?, answered_by = ?, at = ?, owner = ?, "
    "state = 'claimed' WHERE thread_id = ? AND interrupt_id = ? AND owner = ? AND at = ? "
    "AND state IN ('claimed', 'stopped')"
)
FINISH = (
    "UPDATE sopgraph_claims SET state = ? WHERE thread_id = ? AND interrupt_id = ? AND owner = ?"
)
LOG = "INSERT INTO sopgraph_answers VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
HISTORY = "SELECT * FROM sopgraph_answers WHERE thread_id = ? ORDER BY at"


def _pg(sql: str) -> str:
    return sql.replace("?", "%s")


def _take_over_args(held: Claim, answer: Answer) -> tuple[str, ...]:
    return (answer.decision, answer.by, answer.at, OWNER, answer.thread_id,
            answer.interrupt_id, held.owner, held.answer.at)  # fmt: skip


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (``/proc``), None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # field 22: starttime


OWNER = f"{socket.gethostname()}:{os.getpid()}:{_start_time(os.getpid())}"


def owner_gone(owner: str, at: str) -> bool:
    """Whether the process that made a claim (``owner``, at ``at``) can no longer finish it:
    on this host, its pid with its start time is not running; elsewhere, the lease is over."""
    host, _, rest = owner.partition(":")
    pid, _, started = rest.partition(":")
    if host == socket.gethostname() and pid.isdigit():
        return _start_time(int(pid)) != started
    age = datetime.now(UTC) - datetime.fromisoformat(at.replace("Z", "+00:00"))
    return age.total_seconds() > LEASE_S


@dataclass(frozen=True)
class Answer:
    """One answer to one gated action: which run, which interrupt of which node, what, who."""

    thread_id: str
    interrupt_id: str
    node: str
    decision: str
    by: str
    at: str

    def words(self) -> str:
        return f"{self.decision!r} by {self.by} at {self.at}"


@dataclass(frozen=True)
class Claim:
    """The claim row on an interrupt: the answer that holds it, its process, its state."""

    answer: Answer
    owner: str
    state: str  # claimed | finished | stopped (its drive raised: the action may have run)

    @property
    def abandoned(self) -> bool:
        """Claimed by a process that is gone before it finished."""
        return self.state == "stopped" or (
            self.state == "claimed" and owner_gone(self.owner, self.answer.at)
        )


class AnswerBook:
    """The claims and the answer log of one checkpoint store (subclasses: where they live)."""

    async def claim(self, answer: Answer) -> Claim | None:
        """Claim ``answer``'s interrupt for this process: None when this answer won it, else
        the claim that holds it (this answer changed nothing)."""
        raise NotImplementedError

    async def take_over(self, held: Claim, answer: Answer) -> bool:
        """Take an abandoned claim ``held`` for ``answer``; False when another caller took it
        first (or its process came back)."""
        raise NotImplementedError

    async def finish(self, thread_id: str, interrupt_id: str, state: str = "finished") -> None:
        """Mark this process's claim ``finished`` (its drive returned) or ``stopped``."""
        raise NotImplementedError

    async def stop(self, thread_id: str, interrupt_id: str) -> None:
        await self.finish(thread_id, interrupt_id, "stopped")

    async def log(self, answer: Answer, outcome: str, detail: str = "") -> None:
        raise NotImplementedError

    async def history(self, thread_id: str) -> list[dict[str, Any]]:
        raise NotImplementedError


def _claim_of(row: tuple[Any, ...]) -> Claim:
    return Claim(Answer(*row[:6]), owner=row[6], state=row[7])


def answer_entry(row: tuple[Any, ...]) -> dict[str, Any]:
    keys = ("thread_id", "interrupt_id", "node", "decision", "by", "at", "outcome", "detail")
    return dict(zip(keys, row, strict=True))


class MemoryAnswers(AnswerBook):
    """One process's claims (the ``memory`` checkpoint store dies with it too)."""

    def __init__(self) -> None:
        self.claims: dict[tuple[str, str], Claim] = {}
        self.answers: list[dict[str, Any]] = []
        self.lock = asyncio.Lock()

    async def claim(self, answer: Answer) -> Claim | None:
        async with self.lock:
            key = (answer.thread_id, answer.interrupt_id)
            if key in self.claims:
                return self.claims[key]
            self.claims[key] = Claim(answer, OWNER, "claimed")
            return None

    async def take_over(self, held: Claim, answer: Answer) -> bool:
        async with self.lock:
            key = (answer.thread_id, answer.interrupt_id)
            if self.claims.get(key) != held:
                return False
            self.claims[key] = Claim(answer, OWNER, "claimed")
            return True

    async def finish(self, thread_id: str, interrupt_id: str, state: str = "finished") -> None:
        held = self.claims.get((thread_id, interrupt_id))
        if held is not None:
            self.claims[(thread_id, interrupt_id)] = Claim(held.answer, held.owner, state)

    async def log(self, answer: Answer, outcome: str, detail: str = "") -> None:
        self.answers.append({**asdict(answer), "outcome": outcome, "detail": detail})

    async def history(self, thread_id: str) -> list[dict[str, Any]]:
        return [a for a in self.answers if a["thread_id"] == thread_id]


class SqliteAnswers(AnswerBook):
    """Claims in the SQLite checkpoint file, on a connection of their own: an insert on the
    primary key is atomic across processes; a writer waits up to ``BUSY_TIMEOUT_MS``."""

    def __init__(self, path: str | Path):
        self.conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self.conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        self.mutex = threading.Lock()
        self._run(lambda c: c.executescript(SQL))

    def _run(self, fn: Any) -> Any:
        with self.mutex:
            return fn(self.conn)

    async def _call(self, fn: Any) -> Any:
        return await asyncio.to_thread(self._run, fn)

    async def claim(self, answer: Answer) -> Claim | None:
        row = (*asdict(answer).values(), OWNER, "claimed")

        def insert(c: sqlite3.Connection) -> Claim | None:
            cur = c.execute(
                f"INSERT OR IGNORE INTO sopgraph_claims ({CLAIM_COLUMNS}) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )
            if cur.rowcount == 1:
                return None
            held = c.execute(HELD, (answer.thread_id, answer.interrupt_id)).fetchone()
            return _claim_of(held)

        return await self._call(insert)

    async def take_over(self, held: Claim, answer: Answer) -> bool:
        def update(c: sqlite3.Connection) -> bool:
            return c.execute(TAKE_OVER, _take_over_args(held, answer)).rowcount == 1

        return await self._call(update)

    async def finish(self, thread_id: str, interrupt_id: str, state: str = "finished") -> None:
        args = (state, thread_id, interrupt_id, OWNER)
        await self._call(lambda c: c.execute(FINISH, args))

    async def log(self, answer: Answer, outcome: str, detail: str = "") -> None:
        row = (*asdict(answer).values(), outcome, detail)
        await self._call(lambda c: c.execute(LOG, row))

    async def history(self, thread_id: str) -> list[dict[str, Any]]:
        rows = await self._call(lambda c: c.execute(HISTORY, (thread_id,)).fetchall())
        return [answer_entry(r) for r in rows]

    def close(self) -> None:
        self.conn.close()


class PostgresAnswers(AnswerBook):
    """Claims in the Postgres checkpoint database: ``INSERT ... ON CONFLICT DO NOTHING`` on
    the primary key, one autocommit statement each."""

    def __init__(self, conn: Any):
        self.conn = conn
        self.lock = asyncio.Lock()  # one statement at a time on the connection

    @classmethod
    async def connect(cls, dsn: str) -> PostgresAnswers:
        import psycopg

        conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
        book = cls(conn)
        async with book.lock, schema_lock(conn):
            for statement in filter(str.strip, SQL.split(";")):
                await conn.execute(statement)
        return book

    async def _fetch(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        async with self.lock:
            cur = await self.conn.execute(sql, args)
            return await cur.fetchall() if cur.description else []

    async def claim(self, answer: Answer) -> Claim | None:
        won = await self._fetch(
            f"INSERT INTO sopgraph_claims ({CLAIM_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, "
            "%s, %s) ON CONFLICT DO NOTHING RETURNING thread_id",
            (*asdict(answer).values(), OWNER, "claimed"),
        )
        if won:
            return None
        held = await self._fetch(_pg(HELD), (answer.thread_id, answer.interrupt_id))
        return _claim_of(held[0])

    async def take_over(self, held: Claim, answer: Answer) -> bool:
        rows = await self._fetch(
            _pg(TAKE_OVER) + " RETURNING thread_id", _take_over_args(held, answer)
        )
        return bool(rows)

    async def finish(self, thread_id: str, interrupt_id: str, state: str = "finished") -> None:
        await self._fetch(_pg(FINISH), (state, thread_id, interrupt_id, OWNER))

    async def log(self, answer: Answer, outcome: str, detail: str = "") -> None:
        await self._fetch(_pg(LOG), (*asdict(answer).values(), outcome, detail))

    async def history(self, thread_id: str) -> list[dict[str, Any]]:
        rows = await self._fetch(_pg(HISTORY), (thread_id,))
        return [answer_entry(r) for r in rows]


@asynccontextmanager
async def open_answer_book(spec: str | Path) -> AsyncIterator[AnswerBook]:
    """The answer book of the checkpoint store ``spec`` (as ``open_checkpointer`` takes it)."""
    if str(spec) == "memory":
        yield MemoryAnswers()
    elif str(spec).startswith(("postgres://", "postgresql://")):
        book = await PostgresAnswers.connect(str(spec))
        try:
            yield book
        finally:
            await book.conn.close()
    else:
        sqlite_book = SqliteAnswers(spec)
        try:
            yield sqlite_book
        finally:
            sqlite_book.close()
