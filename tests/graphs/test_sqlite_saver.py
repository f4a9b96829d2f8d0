"""The inline SQLite saver: a task's writes wait for their superstep's checkpoint, briefly."""

from __future__ import annotations

import asyncio
import sqlite3
import sys

from langgraph.checkpoint.base import empty_checkpoint
from sop_factory import make_sop

from sopgraph.graphs import sqlite_saver
from sopgraph.graphs.runner import Session
from sopgraph.graphs.sqlite_saver import (
    HOLD_S,
    NULL_TASK_ID,
    STEP_END_S,
    open_sqlite_saver,
    superseded,
)

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
    interrupts, a Command's update (no task) and unapplied channels are kept, and another
    thread's writes are not committed early because of this checkpoint."""
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
        kept = [(NULL_TASK_ID, "trail"), (OTHER, "__interrupt__"), ("task-3", "actions")]
        assert sorted(_stored_writes(path)) == kept
        # thread t2's write waits for a checkpoint of t2, or for HOLD_S
        await asyncio.sleep(HOLD_S * 20)
        assert sorted(_stored_writes(path)) == sorted([*kept, (TASK, "trail")])
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


async def test_a_node_whose_sibling_runs_is_committed_within_hold_s(tmp_path):
    """With the session's count of running nodes, a finished node's writes are on file within
    HOLD_S while another node of its run still runs (a kill then must not repeat it); when
    none runs, they wait for the superstep's checkpoint, up to STEP_END_S."""
    path = str(tmp_path / "ck.sqlite")
    async with open_sqlite_saver(path) as saver:
        saver.in_flight = {"t1": 1}  # the sibling
        config = await _first_checkpoint(saver)
        await saver.aput_writes(config, [("trail", [1])], TASK)
        await asyncio.sleep(HOLD_S * 20)
        assert _stored_writes(path) == [(TASK, "trail")]
        saver.in_flight = {}  # the last node of the step finished
        await saver.aput_writes(config, [("visits", {"a": 1})], OTHER)
        await asyncio.sleep(HOLD_S * 20)
        assert _stored_writes(path) == [(TASK, "trail")]  # waiting for the checkpoint
        await asyncio.sleep(STEP_END_S * 2)
        assert sorted(_stored_writes(path)) == [(TASK, "trail"), (OTHER, "visits")]


async def test_a_run_commits_a_finished_branch_while_its_sibling_runs(tmp_path, monkeypatch):
    """End to end on a compiled SOP: while one branch's tool waits, the session counts it as
    running and the other branch's finished node is on file within HOLD_S (its writes, for a
    resume), not held for the superstep's checkpoint; once both end, the count is empty."""
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    shared = tmp_path / "modules"
    shared.mkdir()
    (shared / "slow_gate.py").write_text("import asyncio\nGATE = asyncio.Event()\n")
    monkeypatch.syspath_prepend(str(shared))
    monkeypatch.delitem(sys.modules, "slow_gate", raising=False)
    # without the sibling rule quick's writes would wait this long for the step's checkpoint
    monkeypatch.setattr(sqlite_saver, "STEP_END_S", 60.0)
    nodes = {
        "first": {"kind": "observation", "text": "first", "next": {"true": ["slow", "quick"]}},
        "slow": {"kind": "root_cause", "text": "slow"},
        "quick": {"kind": "root_cause", "text": "quick"},
    }
    ok = "return Verdict(value=True)"
    slow = "import slow_gate\nawait slow_gate.GATE.wait()\nreturn Verdict(value=True)"
    root = make_sop(
        tmp_path / "sop",
        {"id": "branches", "entry": {"alarm": ["first"]}, "nodes": nodes},
        {"first": ok, "slow": slow, "quick": ok},
    )
    path = tmp_path / "ck.sqlite"
    async with Session(root, checkpoint=str(path), mcp=False) as s:
        run = asyncio.create_task(s.run({"type": "alarm"}, thread_id="t1"))
        for _ in range(500):  # until quick's writes are on file (or 5 s)
            if any(c == "trail" for _, c in _stored_writes(path)):
                break
            await asyncio.sleep(0.01)
        assert s.services.in_flight == {"t1": 1}  # slow
        assert len({t for t, c in _stored_writes(path) if c == "trail"}) == 1  # quick's alone
        import slow_gate

        slow_gate.GATE.set()
        result = await run
    assert result.status == "done" and set(result.path) == {"first", "slow", "quick"}
    assert s.services.in_flight == {}
