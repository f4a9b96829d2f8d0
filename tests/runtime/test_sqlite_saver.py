"""The inline SQLite saver: a task's writes wait for their superstep's checkpoint, briefly."""

from __future__ import annotations

import asyncio
import sqlite3
import sys

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from sop_factory import make_sop

from sopgraph.graphs.input_schema import InputError
from sopgraph.runtime import sqlite_saver
from sopgraph.runtime.runner import Session
from sopgraph.runtime.sqlite_saver import (
    HOLD_S,
    NULL_TASK_ID,
    STEP_END_S,
    open_sqlite_saver,
    superseded,
)

# how long a poll waits for what a run does before the asserts judge it: generous, as the test
# workers share two cores in CI with the servers they start; a poll ends when its condition holds
POLL_S = 60.0


async def _until(condition, timeout: float = POLL_S) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition() and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.01)


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


def _gate_module(tmp_path, monkeypatch, name: str) -> None:
    """A module ``name`` with an ``asyncio.Event`` GATE that the SOP's tools (run by the session)
    and the test share; the session's home under ``tmp_path``."""
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    shared = tmp_path / "modules"
    shared.mkdir()
    (shared / f"{name}.py").write_text("import asyncio\nGATE = asyncio.Event()\n")
    monkeypatch.syspath_prepend(str(shared))
    monkeypatch.delitem(sys.modules, name, raising=False)


def _journaled(path) -> list[tuple[int, str]]:
    """(step, task) of the node results another connection sees in the journal."""
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT step, task FROM sopgraph_nodes ORDER BY step").fetchall()


@pytest.mark.parametrize("journal", [True, False], ids=["journal", "checkpoint-per-step"])
async def test_a_run_commits_a_finished_branch_while_its_sibling_runs(
    tmp_path, monkeypatch, journal
):
    """End to end on a compiled SOP: while one branch's tool waits, the other branch's finished
    node is on file (for a resume) and the session counts the waiting one as running; once both
    end, the count is empty. Journaled: the node's result is a journal row, committed within
    HOLD_S although its sibling still runs. Checkpointed every superstep: its writes, within HOLD_S, not held for the
    superstep's checkpoint."""
    _gate_module(tmp_path, monkeypatch, "slow_gate")
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

    def quick_on_file() -> bool:
        if journal:
            return any(task == "quick" for _, task in _journaled(path))
        return len({t for t, c in _stored_writes(path) if c == "trail"}) == 1

    async with Session(root, checkpoint=str(path), mcp=False, journal=journal) as s:
        run = asyncio.create_task(s.run({"type": "alarm"}, thread_id="t1"))
        await _until(quick_on_file)  # quick's result is on file
        assert s.graph.checkpointer.in_flight == {"t1": 1}  # slow
        assert quick_on_file()
        if journal:  # first and quick, each at its superstep; no checkpoint yet
            assert _journaled(path) == [(1, "first"), (2, "quick")]
            assert _stored_writes(path) == []
        import slow_gate

        slow_gate.GATE.set()
        result = await run
    assert result.status == "done" and set(result.path) == {"first", "slow", "quick"}
    assert s.graph.checkpointer.in_flight == {}


async def test_a_stopped_resume_is_continued_from_the_journal(tmp_path, monkeypatch):
    """A resume whose gated action ran (its result journaled) and whose process then stopped
    mid-way (here: the next node waits forever; a second session on the same files stands in
    for the new process) is continued by that session: the approval recorded with the resume
    is used, the action is not performed again, and a different answer is refused."""
    _gate_module(tmp_path, monkeypatch, "stuck_gate")
    marker = tmp_path / "act_runs"
    nodes = {
        "first": {"kind": "observation", "text": "first", "next": {"true": ["act"]}},
        "act": {
            "kind": "action",
            "text": "act",
            "approval": "required",
            "cost": "high",
            "next": {"true": ["stuck"]},
        },
        "stuck": {"kind": "root_cause", "text": "stuck"},
    }
    tools = {
        "first": "return Verdict(value=True)",
        "act": f"open({str(marker)!r}, 'a').write('x')\nreturn Verdict(value=True)",
        "stuck": "import stuck_gate\nawait stuck_gate.GATE.wait()\nreturn Verdict(value=True)",
    }
    sop = {"id": "gated_journal", "entry": {"alarm": ["first"]}, "nodes": nodes}
    root = make_sop(tmp_path / "sop", sop, tools)
    path = str(tmp_path / "ck.sqlite")
    async with Session(root, checkpoint=path, mcp=False) as first:
        paused = await first.run({"type": "alarm"}, thread_id="t1")
        assert paused.status == "interrupted"
        gate = paused.interrupt["id"]
        stopped = asyncio.create_task(
            first.resume("t1", "approve", interrupt_id=gate, approver="ann")
        )
        await _until(lambda: marker.exists() and any(t == "act" for _, t in _journaled(path)))
        assert marker.read_text() == "x"
        async with Session(root, checkpoint=path, mcp=False) as second:
            with pytest.raises(InputError, match="already answered"):
                await second.resume("t1", "reject", interrupt_id=gate)
            # while the first resume runs, nothing else may continue it
            with pytest.raises(InputError, match="being carried out now"):
                await second.run({"type": "alarm"}, thread_id="t1")
            stopped.cancel()  # the first resume stops mid-run, as a killed process would
            await asyncio.gather(stopped, return_exceptions=True)
            import stuck_gate

            stuck_gate.GATE.set()
            done = await second.run({"type": "alarm"}, thread_id="t1")
    assert done.status == "done" and done.resumed
    assert done.path == ["first", "act", "stuck"]
    assert [(a["node"], a["approver"]) for a in done.actions] == [("act", "ann")]
    assert marker.read_text() == "x"  # performed once


async def test_a_paused_run_has_its_finished_siblings_writes_on_file(tmp_path, monkeypatch):
    """A journaled run that pauses at a gated action while a sibling node finished in the same
    superstep returns with the sibling's writes committed in the pause's checkpoint commit (a
    thread's held writes go with its checkpoint, not after STEP_END_S): a process killed while
    the run waits for approval repeats no node."""
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(sqlite_saver, "STEP_END_S", 60.0)
    nodes = {
        "first": {"kind": "observation", "text": "first", "next": {"true": ["act", "quick"]}},
        "act": {"kind": "action", "text": "act", "approval": "required", "cost": "low"},
        "quick": {"kind": "root_cause", "text": "quick"},
    }
    ok = "return Verdict(value=True)"
    sop = {"id": "paused_sibling", "entry": {"alarm": ["first"]}, "nodes": nodes}
    root = make_sop(tmp_path / "sop", sop, {"first": ok, "quick": ok})
    path = tmp_path / "ck.sqlite"
    async with Session(root, checkpoint=str(path), mcp=False) as s:
        paused = await s.run({"type": "alarm"}, thread_id="t1")
        assert paused.status == "interrupted"
        stored = {c for _, c in _stored_writes(path)}
        assert "trail" in stored and "__interrupt__" in stored, stored
        done = await s.resume("t1", "approve", node="act")
    assert done.status == "done" and sorted(done.path) == ["act", "first", "quick"]
