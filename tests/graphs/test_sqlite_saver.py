"""The inline SQLite saver: a task's writes wait for their superstep's checkpoint, briefly."""

from __future__ import annotations

import asyncio
import sqlite3

from langgraph.checkpoint.base import empty_checkpoint

from sopgraph.graphs.sqlite_saver import HOLD_S, NULL_TASK_ID, open_sqlite_saver, superseded

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


async def test_writes_the_next_checkpoint_applied_are_not_stored(tmp_path):
    """In one commit with the checkpoint that holds their values, a node's writes are dropped;
    interrupts, a Command's update (no task), other threads' and unapplied channels are kept."""
    path = str(tmp_path / "ck.sqlite")
    async with open_sqlite_saver(path) as saver:
        config = await _first_checkpoint(saver)
        other_thread = {"configurable": {**config["configurable"], "thread_id": "t2"}}
        await saver.aput_writes(config, [("trail", [1]), ("visits", {"a": 1})], TASK)
        await saver.aput_writes(config, [("__interrupt__", ["ask"])], OTHER)
        await saver.aput_writes(config, [("trail", [2])], NULL_TASK_ID)
        await saver.aput_writes(other_thread, [("trail", [3])], TASK)
        await saver.aput_writes(config, [("actions", [4])], "task-3")  # not in the checkpoint
        values = {"trail": [1, 2], "visits": {"a": 1}}
        next_checkpoint = {
            **empty_checkpoint(),
            "id": "1f0c0000-0000-6000-8000-000000000001",
            "channel_values": values,
        }
        await saver.aput(config, next_checkpoint, {"source": "loop", "step": 0}, {})
        assert sorted(_stored_writes(path)) == [
            (NULL_TASK_ID, "trail"),
            (TASK, "trail"),  # thread t2's
            (OTHER, "__interrupt__"),
            ("task-3", "actions"),
        ]
        # and a write of the checkpoint before the previous one is no business of this one
        later = {"configurable": {**config["configurable"], "checkpoint_id": next_checkpoint["id"]}}
        assert not superseded((later, [("trail", [1])], TASK), (config, next_checkpoint))


async def test_checkpoints_put_in_one_turn_share_a_commit(tmp_path):
    """Group commit: runs that end a superstep in the same turn of the event loop wait for one
    commit together, and each gets its own checkpoint back, committed."""
    path = str(tmp_path / "ck.sqlite")
    commits: list[int] = []
    async with open_sqlite_saver(path) as saver:
        saver.before_write = lambda: commits.append(1)
        threads = [f"t{i}" for i in range(3)]
        saved = await asyncio.gather(
            *(
                saver.aput(
                    {"configurable": {"thread_id": t, "checkpoint_ns": ""}},
                    {**empty_checkpoint(), "id": f"1f0c0000-0000-6000-8000-00000000000{i}"},
                    {"source": "input", "step": -1},
                    {},
                )
                for i, t in enumerate(threads)
            )
        )
        assert commits == [1]
        assert [s["configurable"]["thread_id"] for s in saved] == threads
        with sqlite3.connect(path) as conn:
            stored = conn.execute("SELECT thread_id FROM checkpoints ORDER BY thread_id").fetchall()
        assert stored == [(t,) for t in threads]
