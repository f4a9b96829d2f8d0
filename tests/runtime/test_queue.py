"""The job queue's commands (``runtime/queue.py``): a queue that is not running is one line and
nothing queued; a run put on the queue is read back with ``runs show``; a job delivered twice
returns the finished run without running a node again; the worker's approval policy caps the
submitter's; ``queue prune`` removes only old finished jobs; a missing ``[queue]`` extra is the
extra's line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import psycopg
import pytest
from pg_fixture import pg_dsn  # noqa: F401 - the fixture
from sop_factory import VALVE_SOP, make_sop

from sopgraph.cli import main
from sopgraph.nodes.ports import free_port

COUNTED = """
with open(os.environ["EXEC_LOG"], "a") as out:
    out.write(ctx.node_id + "\\n")
return Verdict(value=True)
"""


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def sop(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("EXEC_LOG", str(tmp_path / "executions.log"))
    monkeypatch.delenv("SOPGRAPH_MODEL", raising=False)
    return make_sop(tmp_path / "sop", VALVE_SOP, {"check": COUNTED, "open_valve": COUNTED})


def test_a_queue_that_is_not_running_is_one_line_and_nothing_queued(sop, tmp_path, capsys):
    down = f"postgresql://postgres@127.0.0.1:{free_port()}/sopgraph"
    inputs = tmp_path / "in.jsonl"
    inputs.write_text("{}\n{}\n")
    for argv in (
        ["queue", "worker", "--store", down],
        ["queue", "submit", str(sop), "--inputs", str(inputs), "--queue", down],
        ["queue", "status", "--queue", down],
        ["run", str(sop), "--input", "{}", "--queue", down],
    ):
        rc, out, err = _cli(capsys, *argv)
        assert rc == 2 and out == "", (argv, out, err)
        assert err.splitlines() == [
            f"error: the job queue at {down} is not reachable (Connection refused); start "
            "PostgreSQL there, or pass the URL of a running one"
        ], argv
    rc, _, err = _cli(capsys, "queue", "status", "--queue", str(tmp_path / "q.sqlite"))
    assert rc == 2 and err.startswith("error: the job queue needs a postgresql:// URL")


def test_without_the_queue_extra_the_command_says_which_extra(sop, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "procrastinate", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "sopgraph.runtime.queue", raising=False)
    rc, out, err = _cli(capsys, "queue", "status", "--queue", "postgresql://x@127.0.0.1/db")
    assert rc == 2 and out == ""
    assert err.strip() == (
        "error: sopgraph queue needs the job queue from the [queue] extra, which is not "
        "installed (no module procrastinate): pip install 'sopgraph[queue]'"
    )


@pytest.mark.postgres
def test_a_queued_run_is_read_back_and_a_second_delivery_runs_no_node(
    sop,
    tmp_path,
    capsys,
    pg_dsn: str,  # noqa: F811
):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{}\n"not an object"\n')
    rc, out, err = _cli(capsys, "queue", "submit", str(sop), "--inputs", str(bad),
                        "--queue", pg_dsn)  # fmt: skip
    assert rc == 2 and out == "" and "input 2 is not a JSON object" in err
    rc, out, _ = _cli(capsys, "queue", "status", "--queue", pg_dsn, "--json")
    assert rc == 0 and json.loads(out) == {}  # the good input was not queued either

    run = ["run", str(sop), "--input", "{}", "--queue", pg_dsn, "--approval", "approve"]
    rc, out, _ = _cli(capsys, *run, "--thread", "q-1")
    assert rc == 0 and out.strip() == "q-1"
    worker = ["queue", "worker", "--store", pg_dsn, "--approval", "approve", "--until-idle"]
    assert _cli(capsys, *worker)[0] == 0
    rc, out, _ = _cli(capsys, "runs", "show", "q-1", "--checkpoint", pg_dsn, "--json")
    shown = json.loads(out)
    assert shown["status"] == "finished"
    assert shown["result"]["path"] == ["check", "open_valve"]
    executions = Path(tmp_path / "executions.log")
    assert executions.read_text().split() == ["check", "open_valve"]

    # the same run delivered again (a worker put back after it finished): returned as stored
    assert _cli(capsys, *run, "--thread", "q-1")[0] == 0
    assert _cli(capsys, *worker)[0] == 0
    assert executions.read_text().split() == ["check", "open_valve"]
    rc, out, _ = _cli(capsys, "queue", "status", "--queue", pg_dsn, "--json")
    assert json.loads(out) == {"succeeded": 2}

    # a worker whose operator asks for every gated action cuts a submitted `approve` down
    assert _cli(capsys, *run, "--thread", "q-2")[0] == 0
    assert _cli(capsys, "queue", "worker", "--store", pg_dsn, "--until-idle")[0] == 0
    rc, out, _ = _cli(capsys, "runs", "show", "q-2", "--checkpoint", pg_dsn, "--json")
    paused = json.loads(out)
    assert paused["status"] == "interrupted"
    assert [i["node"] for i in paused["result"]["interrupts"]] == ["open_valve"]

    # prune: only finished jobs whose last event is older than the cut-off, with their events
    rc, out, _ = _cli(capsys, "queue", "prune", "--queue", pg_dsn, "--older-than", "1h", "--json")
    assert rc == 0 and json.loads(out) == {"jobs": 0, "events": 0}
    with psycopg.connect(pg_dsn) as conn:  # q-1's two jobs finished two hours ago
        conn.execute(
            "UPDATE procrastinate_events SET at = at - interval '2 hours' WHERE job_id IN "
            "(SELECT id FROM procrastinate_jobs WHERE args->>'thread_id' = 'q-1')"
        )
        (q1_events,) = conn.execute(
            "SELECT count(*) FROM procrastinate_events e JOIN procrastinate_jobs j "
            "ON j.id = e.job_id WHERE j.args->>'thread_id' = 'q-1'"
        ).fetchone()
    rc, out, _ = _cli(capsys, "queue", "prune", "--queue", pg_dsn, "--older-than", "1h30m")
    assert rc == 0 and out.strip().endswith(
        f"removed 2 finished job(s) older than 90m and their {q1_events} event(s)"
    )
    rc, out, _ = _cli(capsys, "queue", "status", "--queue", pg_dsn, "--json")
    assert json.loads(out) == {"succeeded": 1}  # q-2's job stays
    assert _cli(capsys, "runs", "show", "q-1", "--checkpoint", pg_dsn)[0] == 0  # the run stays


@pytest.mark.parametrize("text", ["7", "d", "7 days", "1h-", "1x"])
def test_a_prune_age_that_is_not_a_duration_is_one_error_line(text, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["queue", "prune", "--queue", "postgresql://x@127.0.0.1/q", "--older-than", text])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and "is not a duration" in err[-1] and "e.g. 7d" in err[-1]
