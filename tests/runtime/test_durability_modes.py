"""LangGraph's durability modes as a Session setting: how many checkpoints a run leaves on
file under each, on SQLite without the node journal and on Postgres, and what the benchmark
command prints for each configuration (figures in docs/benchmarks.md)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from pg_fixture import pg_dsn  # noqa: F401

from sopgraph.graphs.input_schema import InputError
from sopgraph.runtime.runner import Session
from sopgraph.runtime.runs import read_run

SOP = Path(__file__).resolve().parents[2] / "examples" / "service_interruption"
INPUT = {"case_id": "combo_00"}


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))


async def _checkpoints(checkpoint: str, durability: str | None, thread: str) -> int:
    async with Session(
        SOP, checkpoint=checkpoint, approval="approve", journal=False, durability=durability
    ) as session:
        result = await session.run(INPUT, thread_id=thread)
        assert result.status == "done", result
        config = {"configurable": {"thread_id": thread}}
        return len([s async for s in session.graph.aget_state_history(config)])


@pytest.mark.postgres
async def test_sync_checkpoints_every_superstep_and_exit_once(tmp_path: Path, pg_dsn: str):  # noqa: F811
    for store in (str(tmp_path / "c.sqlite"), pg_dsn):
        sync = await _checkpoints(store, "sync", "t-sync")
        default = await _checkpoints(store, None, "t-default")  # no journal: sync
        exit_ = await _checkpoints(store, "exit", "t-exit")
        assert sync == default and sync >= 4, (store, sync)
        assert exit_ == 1, (store, exit_)


def test_an_unknown_durability_is_one_clear_error():
    with pytest.raises(InputError, match="durability 'fast': give sync, async or exit"):
        Session(SOP, checkpoint="memory", durability="fast")


@pytest.mark.postgres
@pytest.mark.slow
def test_the_benchmark_prints_every_configuration_beside_memory(pg_dsn: str, capsys):  # noqa: F811
    from sopgraph.evals.bench_durability import CONFIGS, main

    assert (
        main(["--alarms", "8", "--chunk", "4", "--days", "2", "--postgres", pg_dsn, "--json"]) == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert list(out["configs"]) == list(CONFIGS) and out["alarms"] == 8
    assert out["configs"]["memory"]["vs_memory"] == 1.0
    assert all(c["alarms_per_s"] > 0 for c in out["configs"].values())
    kept = {n: c["a_killed_run_keeps"] for n, c in out["configs"].items()}
    assert kept["sqlite journal"] == "every completed node"
    assert kept["postgres sync"] == "every completed superstep"
    assert kept["postgres exit"] == "nothing of a killed invocation"


async def test_a_run_killed_after_its_input_was_saved_runs_when_delivered_again(tmp_path: Path):
    """A worker killed between saving a run's input and its first step leaves a thread whose
    latest checkpoint is LangGraph's "input" one; its snapshot reads no next node. Running the
    thread again must run it (the queue redelivers such a job), not return it as finished."""
    store, thread = str(tmp_path / "c.sqlite"), "t-killed"
    async with Session(SOP, checkpoint=store, approval="approve", journal=False) as session:
        whole = await session.run(INPUT, thread_id=thread)
        config = {"configurable": {"thread_id": thread}}
        first = [s async for s in session.graph.aget_state_history(config)][-1]
    assert first.metadata["source"] == "input" and whole.path
    kept = first.config["configurable"]["checkpoint_id"]
    with sqlite3.connect(store) as db:  # what the store held when the worker died
        for table in ("checkpoints", "writes"):
            db.execute(f"DELETE FROM {table} WHERE thread_id = ? AND checkpoint_id != ?",
                       (thread, kept))  # fmt: skip
    assert read_run(store, thread).status == "stopped"
    async with Session(SOP, checkpoint=store, approval="approve", journal=False) as session:
        again = await session.run(INPUT, thread_id=thread)
    assert again.status == "done" and again.path == whole.path
    assert read_run(store, thread).status == "finished"
