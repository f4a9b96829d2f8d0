"""Runs spread over worker processes that share one SQLite checkpoint store."""

from __future__ import annotations

from pathlib import Path

import pytest

from sopgraph.runtime.runner import InputError, Session
from sopgraph.runtime.workers import run_workers

SOP = Path(__file__).resolve().parents[2] / "examples" / "service_interruption"
CASES = [f"combo_{i:02d}" for i in range(8)]


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))


@pytest.mark.slow
async def test_two_workers_share_the_store_and_a_rerun_returns_the_stored_runs(tmp_path):
    store = str(tmp_path / "cp.sqlite")
    inputs = [{"case_id": c} for c in CASES]
    ids = [f"w-{c}" for c in CASES]
    batch = run_workers(SOP, inputs, workers=2, checkpoint=store, thread_ids=ids)
    assert batch.workers == 2 and batch.wall_s > 0 and batch.cpu_s > 0
    assert [r.thread_id for r in batch.results] == ids
    assert [r.input for r in batch.results] == inputs
    assert all(r.status == "done" and r.path for r in batch.results)
    # one process's session sees every run the two workers stored, and runs none of them again
    async with Session(SOP, checkpoint=store, approval="approve") as session:
        for inp, tid, first in zip(inputs, ids, batch.results, strict=True):
            again = await session.run(inp, thread_id=tid)
            assert again.stored and again.path == first.path and again.verdicts == first.verdicts


def test_workers_need_a_shared_store():
    with pytest.raises(InputError, match="share the checkpoint store"):
        run_workers(SOP, [{"case_id": "leaf_01"}], workers=2, checkpoint="memory")
