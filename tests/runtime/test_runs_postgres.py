"""``sopgraph runs list|show`` on a Postgres checkpoint store, as on a SQLite one: a run paused at
its gated action is listed ``interrupted``, then ``finished`` with every answer on record once
it is approved; the URL is printed without its password."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pg_fixture import pg_dsn  # noqa: F401
from sop_factory import VALVE_SOP, make_sop

from sopgraph.cli import main
from sopgraph.runtime.runner import Session
from sopgraph.runtime.runs import store_name

SOP = {**VALVE_SOP, "id": "valve_pg"}


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.postgres
async def test_runs_list_and_show_read_a_postgres_store(
    tmp_path: Path,
    capsys,
    monkeypatch,
    pg_dsn: str,  # noqa: F811
) -> None:
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    sop = make_sop(tmp_path / "sop", SOP, {"check": "return Verdict(value=True)",
                                           "open_valve": "return Verdict(value=True)"})  # fmt: skip
    async with Session(sop, checkpoint=pg_dsn) as s:
        paused = await s.run({}, thread_id="pg-runs-1")
    assert paused.status == "interrupted"

    rc, out, _ = _cli(capsys, "runs", "list", "--checkpoint", pg_dsn, "--json")
    listed = {r["thread_id"]: r for r in json.loads(out)}
    assert rc == 0 and listed["pg-runs-1"]["status"] == "interrupted"
    assert listed["pg-runs-1"]["final"] == "waiting: approve open_valve"

    async with Session(sop, checkpoint=pg_dsn) as s:
        gate = paused.interrupts[0]["id"]
        done = await s.resume("pg-runs-1", "approve", interrupt_id=gate)
    assert done.status == "done"

    rc, out, _ = _cli(capsys, "runs", "show", "pg-runs-1", "--checkpoint", pg_dsn, "--json")
    shown = json.loads(out)
    assert rc == 0 and shown["status"] == "finished"
    assert [(a["decision"], a["outcome"]) for a in shown["answers"]] == [("approve", "accepted")]

    rc, out, _ = _cli(capsys, "runs", "list", "--checkpoint", pg_dsn)
    assert rc == 0 and "pg-runs-1" in out and "finished" in out
    with_password = (
        pg_dsn.replace("://", "://sopgraph:hunter2@", 1) if "@" not in pg_dsn else pg_dsn
    )
    assert "hunter2" not in store_name(with_password)

    rc, _, err = _cli(capsys, "runs", "show", "no-such-thread", "--checkpoint", pg_dsn)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "no run 'no-such-thread'" in err
