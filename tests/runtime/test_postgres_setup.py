"""Sessions opening at once on a Postgres database that has no tables yet (queue workers
started together) each create them without error: one at a time, under an advisory lock.
Seen without the lock: ``UniqueViolation ... checkpoint_migrations_pkey`` failed the first job
of one of two queue workers started together."""

from __future__ import annotations

import asyncio
import uuid

import psycopg
import pytest
from pg_fixture import pg_dsn  # noqa: F401 - the fixture

from sopgraph.runtime.answers import PostgresAnswers
from sopgraph.runtime.checkpointers import open_checkpointer

pytestmark = pytest.mark.postgres
SESSIONS = 8


def _fresh_database(dsn: str) -> str:
    name = f"setup_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return dsn.rsplit("/", 1)[0] + f"/{name}"


async def _open_at_once(dsn: str) -> list[BaseException | None]:
    start = asyncio.Event()

    async def one() -> None:
        await start.wait()
        async with open_checkpointer(dsn) as saver:
            await saver.aget_tuple({"configurable": {"thread_id": "none"}})
        book = await PostgresAnswers.connect(dsn)
        await book.conn.close()

    tasks = [asyncio.create_task(one()) for _ in range(SESSIONS)]
    await asyncio.sleep(0.05)
    start.set()
    return await asyncio.gather(*tasks, return_exceptions=True)


def test_sessions_opening_at_once_on_an_empty_database_all_set_it_up(
    pg_dsn: str,  # noqa: F811
) -> None:
    dsn = _fresh_database(pg_dsn)
    errors = [e for e in asyncio.run(_open_at_once(dsn)) if e is not None]
    assert not errors, errors
    with psycopg.connect(dsn) as conn:
        (versions,) = conn.execute("SELECT count(*) FROM checkpoint_migrations").fetchone()
        tables = {
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
            ).fetchall()
        }
    assert versions > 0
    assert {"checkpoints", "checkpoint_writes", "sopgraph_claims", "sopgraph_answers"} <= tables
