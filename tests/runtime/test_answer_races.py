"""Concurrent approvals of one gated action (issue 53, finding 1): 2 and 5 answers at once,
through warm sessions in separate processes, ``sopgraph resume`` processes, two HTTP MCP servers,
two consoles, and a mix of them, on SQLite; the sessions and the mix on Postgres. Each
repetition pauses a new run; the action's tool appends a line each time it executes. The action
executes exactly once every time, exactly one answer wins, and the answer log lists every answer
(``sopgraph.evals.approval_races``; ``python -m sopgraph.evals.approval_races --reps 50`` is
the 50-repetition run docs/security.md reports, for every front).

A stale double click (the console's second POST, sent after the run moved on to the next gate)
is refused and never answers the next gate: see the last test.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pg_fixture import pg_dsn  # noqa: F401

from sopgraph.evals.approval_races import World, race

RACERS = (2, 5)
# repetitions here, by front, kept small so make test stays under its 30 minutes: each
# repetition is a fresh race with every racer started anew, and a CLI racer is a process
# start-up (about a second on this machine). The 50-repetition figures come from the eval.
REPS = {"session": 5, "mcp": 3, "console": 3, "mix": 1, "cli": 1}


def _race(world: World, front: str) -> None:
    for n in RACERS:
        tally = asyncio.run(race(world, front, n, REPS[front]))
        assert not tally.bad, tally.line()
        assert (tally.reps, tally.executions, tally.won) == (REPS[front],) * 3, tally.line()
        assert tally.logged == n * REPS[front], tally.line()


@pytest.mark.slow
@pytest.mark.parametrize("front", ["session", "mcp", "console", "mix", "cli"])
def test_concurrent_approvals_on_sqlite_execute_the_action_once(tmp_path: Path, front: str):
    _race(World(tmp_path, str(tmp_path / "checkpoints.sqlite")), front)


# On Postgres the fronts race through the same claim as on SQLite but in the store's own
# statements: the warm sessions alone, then the mix, whose racers are sessions, `sopgraph
# resume` processes, MCP servers and consoles at once (each front alone: the eval's run).
@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.parametrize("front", ["session", "mix"])
def test_concurrent_approvals_on_postgres_execute_the_action_once(
    tmp_path: Path,
    pg_dsn: str,  # noqa: F811
    front: str,
):
    _race(World(tmp_path, pg_dsn), front)


def test_a_second_click_after_the_run_moved_on_does_not_answer_the_next_gate(tmp_path: Path):
    """The console's form names its gate: the same form POSTed again once the run waits at the
    next gate is refused (stale), and that gate still waits."""
    from sopgraph.evals.approval_races import ConsoleRacer
    from sopgraph.runtime.runner import Session, new_thread_id

    world = World(tmp_path, str(tmp_path / "checkpoints.sqlite"))

    async def go() -> tuple[bool, bool, object, list]:
        click = ConsoleRacer(world, 0)
        await click.start()
        try:
            async with Session(world.sop, checkpoint=world.store) as s:
                paused = await s.run({}, thread_id=f"race:{new_thread_id()}")
                gate = paused.interrupts[0]
                first = await click.answer(paused.thread_id, gate["id"], gate["node"], "ann")
                second = await click.answer(paused.thread_id, gate["id"], gate["node"], "ann")
                return (
                    first,
                    second,
                    await s.result(paused.thread_id),
                    await s.answers_of(paused.thread_id),
                )
        finally:
            await click.close()
            await ConsoleRacer.close_all()

    first, second, after, answers = asyncio.run(go())
    assert (first, second) == (True, False)
    assert after.status == "interrupted" and [i["node"] for i in after.interrupts] == ["confirm"]
    assert [a["outcome"] for a in answers] == ["accepted", "stale"]
    assert "is not waiting at interrupt" in answers[1]["detail"]
    assert world.log.read_text().count(" standby ") == 1
