"""The inline SQLite saver: a task's writes wait for their superstep's checkpoint, briefly."""

from __future__ import annotations

import asyncio
import sqlite3

from langgraph.checkpoint.base import empty_checkpoint

from sopgraph.graphs.sqlite_saver import HOLD_S, open_sqlite_saver

TASK = "00000000-0000-0000-0000-000000000001"
OTHER = "00000000-0000-0000-0000-000000000002"


def _stored_writes(path) -> list[tuple[str, str]]:
    """(task_id, channel) of the writes another connection sees."""
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT task_id, channel FROM writes ORDER BY idx").fetchall()


async def _first_checkpoint(saver) -> dict:
    config = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
    return await saver.aput(config, empty_checkpoint(), {"source": "input", "step": -1}, {})


async def test_held_writes_commit_with_the_next_checkpoint(tmp_path):
    path = str(tmp_path / "ck.sqlite")
    flushed: list[int] = []
    async with open_sqlite_saver(path) as saver:
        saver.before_write = lambda: flushed.append(len(_stored_writes(path)))
        config = await _first_checkpoint(saver)
        await saver.aput_writes(config, [("trail", [1]), ("visits", {"a": 1})], TASK)
        assert _stored_writes(path) == []  # held, not yet committed
        next_checkpoint = {**empty_checkpoint(), "id": "1f0c0000-0000-6000-8000-000000000001"}
        await saver.aput(config, next_checkpoint, {"source": "loop", "step": 0}, {})
        assert _stored_writes(path) == [(TASK, "trail"), (TASK, "visits")]
        # the log is flushed before each commit: once for the first checkpoint, once for both
        assert flushed == [0, 0]


async def test_held_writes_commit_on_their_own_when_no_checkpoint_follows(tmp_path):
    """A task whose sibling still runs: its writes reach the file within HOLD_S."""
    path = str(tmp_path / "ck.sqlite")
    async with open_sqlite_saver(path) as saver:
        config = await _first_checkpoint(saver)
        await saver.aput_writes(config, [("trail", [1])], TASK)
        await asyncio.sleep(HOLD_S * 20)
        assert _stored_writes(path) == [(TASK, "trail")]


async def test_a_read_sees_held_writes_and_closing_commits_them(tmp_path):
    path = str(tmp_path / "ck.sqlite")
    async with open_sqlite_saver(path) as saver:
        config = await _first_checkpoint(saver)
        await saver.aput_writes(config, [("trail", [1])], TASK)
        got = await saver.aget_tuple(config)
        assert [(t, c) for t, c, _ in got.pending_writes] == [(TASK, "trail")]
    async with open_sqlite_saver(path) as saver:
        await saver.aput_writes(config, [("visits", {"a": 1})], OTHER)
    assert sorted(_stored_writes(path)) == [(TASK, "trail"), (OTHER, "visits")]
