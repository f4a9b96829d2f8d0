"""A queue worker SIGKILLed during a batch of 200 runs (issue 54): its runs are put back and
finished by the workers left, none lost, no node saved before the kill run again, and each
gated action acting once.

Two ``sopgraph queue worker`` processes on one Postgres; one is killed with runs in flight
and a fresh one started in its place. The executions are counted by the tools themselves: each
node's tool appends ``<n> <node> <pid>`` to a file when it finishes, and the gated action
calls a real MCP action server (``tests/servers/idempotent_actions.py --honour-key``) that
appends a line each time it really acts.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psycopg
import pytest
from kill_resume import stop
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pg_fixture import pg_dsn  # noqa: F401 - the fixture
from sop_factory import make_sop

from sopgraph.runtime.runs import read_run

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "tests" / "servers" / "idempotent_actions.py"
RUNS = 200
NODES = ["a", "b", "c", "d", "act"]
SOP = {
    "id": "queue_kill",
    "entry": {"default": ["a"]},
    "nodes": {
        "a": {"kind": "observation", "text": "a", "next": {"true": ["b", "c"]}},
        "b": {"kind": "root_cause", "text": "b", "next": {"true": ["d"]}},
        "c": {"kind": "root_cause", "text": "c", "next": {"true": ["d"]}},
        "d": {"kind": "constraint", "text": "d", "next": {"true": ["act"]}},
        "act": {"kind": "action", "text": "open the valve", "cost": "high",
                "approval": "required"},
    },
}  # fmt: skip
DONE = """
await asyncio.sleep({sleep})
with open(os.environ["EXEC_LOG"], "a") as out:
    out.write(f"{{input['n']}} {node} {{os.getpid()}}\\n")
return Verdict(value=True{observed})
"""
ACT = 'opened = await ctx.mcp.call("actions", "open_valve", {"valve": str(input["n"])})\n'


def _tools() -> dict[str, str]:
    tools = {
        n: DONE.format(sleep=0.02 if n == "b" else 0.005, node=n, observed="") for n in NODES[:-1]
    }
    tools["act"] = ACT + DONE.format(sleep=0, node="act", observed=', observed=opened["key"]')
    return tools


def _worker(env: dict[str, str], dsn: str, log: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "sopgraph", "queue", "worker", "--store", dsn,
           "--concurrency", "4", "--approval", "approve", "--heartbeat", "0.5",
           "--stalled-after", "3"]  # fmt: skip
    with log.open("a") as out:
        return subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=out, stderr=out,
                                stdin=subprocess.DEVNULL)  # fmt: skip


def _counts(dsn: str) -> dict[str, int]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT status::text, count(*) FROM procrastinate_jobs GROUP BY 1")
        return dict(rows.fetchall())


def _unfinished(dsn: str) -> list[tuple]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT id, status::text, attempts FROM procrastinate_jobs "
            "WHERE status::text <> 'succeeded' ORDER BY id"
        ).fetchall()


def _busy_workers(dsn: str) -> int:
    """How many workers hold a running job now."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT count(DISTINCT worker_id) FROM procrastinate_jobs WHERE status = 'doing'"
        ).fetchone()
        return int(row[0]) if row else 0


def _stalled(dsn: str) -> dict[int, str]:
    """The running jobs of workers whose heartbeat is a second old: job id -> thread id."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT j.id, j.args->>'thread_id' FROM procrastinate_jobs j "
            "JOIN procrastinate_workers w ON w.id = j.worker_id WHERE j.status = 'doing' "
            "AND w.last_heartbeat < now() - interval '1 second'"
        )
        return dict(rows.fetchall())


def _saved_nodes(dsn: str, threads: list[str]) -> set[tuple[str, str]]:
    """(thread, node) of every node whose result the store holds for ``threads``: each node
    writes its ``visits`` channel, in a finished superstep or as a pending write of one that
    was cut short. LangGraph never runs those again."""
    serde = JsonPlusSerializer()
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT thread_id, type, blob FROM checkpoint_writes "
            "WHERE channel = 'visits' AND thread_id = ANY(%s)",
            (threads,),
        ).fetchall()
    return {(t, node) for t, kind, blob in rows for node in serde.loads_typed((kind, blob))}


def _wait(what: str, until, timeout: float, procs: list[subprocess.Popen], log: Path, state=str):
    deadline = time.monotonic() + timeout
    while not (found := until()):
        dead = [p.returncode for p in procs if p.poll() is not None]
        assert not dead, f"a worker exited ({dead}) before {what}:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"timed out before {what}; {state()}"
        time.sleep(0.05)
    return found


def test_a_worker_killed_mid_batch_loses_no_run_and_repeats_no_saved_node(
    tmp_path: Path,
    pg_dsn: str,  # noqa: F811
) -> None:
    sop = make_sop(tmp_path / "sop", SOP, _tools())
    servers = {"actions": {"command": sys.executable, "args": [str(SERVER), "--honour-key"]}}
    (sop / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    executions, actions = tmp_path / "executions.log", tmp_path / "actions.log"
    env = {k: v for k, v in os.environ.items() if k != "SOPGRAPH_MODEL"}
    env.update(SOPGRAPH_HOME=str(tmp_path / "home"), EXEC_LOG=str(executions),
               ACTIONS_LOG=str(actions))  # fmt: skip
    inputs = tmp_path / "inputs.jsonl"
    inputs.write_text("".join(json.dumps({"n": i}) + "\n" for i in range(RUNS)))
    start = time.monotonic()
    submitted = subprocess.run(
        [sys.executable, "-m", "sopgraph", "queue", "submit", str(sop), "--inputs",
         str(inputs), "--queue", pg_dsn, "--approval", "approve", "--json"],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr
    threads = [json.loads(line)["thread_id"] for line in submitted.stdout.splitlines()]
    assert len(set(threads)) == RUNS

    log = tmp_path / "workers.log"
    workers = [_worker(env, pg_dsn, log) for _ in range(2)]
    try:

        def succeeded(at_least: int) -> bool:
            counts = _counts(pg_dsn)  # a failed run is never retried: say so at once
            assert not counts.get("failed"), f"{_unfinished(pg_dsn)}\n{log.read_text()[-3000:]}"
            return counts.get("succeeded", 0) >= at_least

        victim = workers[0]
        # mid-batch, with the victim inside runs: its tools have finished nodes already
        _wait("40 runs finished", lambda: succeeded(40), 240, workers, log)
        _wait("the victim ran a node", lambda: str(victim.pid) in executions.read_text(),
              30, workers, log)  # fmt: skip
        # both workers inside runs, so the victim holds one when it dies (on a loaded machine it
        # can be between two jobs, waiting for the next)
        _wait("both workers inside runs", lambda: _busy_workers(pg_dsn) == 2, 30, workers, log)
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait()
        killed_at = _counts(pg_dsn)
        time.sleep(1.2)  # the survivor's heartbeat is younger than a second, the victim's not
        in_flight = _stalled(pg_dsn)
        # what the store held of those runs when their worker died: never to be run again
        saved = _saved_nodes(pg_dsn, list(in_flight.values()))
        workers[0] = _worker(env, pg_dsn, log)  # a fresh worker in the victim's place
        _wait(f"all {RUNS} runs finished", lambda: succeeded(RUNS), 400, workers, log,
              lambda: f"unfinished jobs (id, status, attempts): {_unfinished(pg_dsn)}")  # fmt: skip
    finally:
        for w in workers:
            stop(w)
    wall = time.monotonic() - start

    assert killed_at.get("succeeded", 0) < RUNS, "the kill came after the batch"
    assert in_flight, "the victim held no run when it was killed"
    assert _counts(pg_dsn) == {"succeeded": RUNS}  # none lost, none failed
    with psycopg.connect(pg_dsn) as conn:
        attempts = dict(conn.execute("SELECT id, attempts FROM procrastinate_jobs").fetchall())
    assert all(attempts[j] >= 1 for j in in_flight)  # each was delivered again

    by_n = {i: t for i, t in enumerate(threads)}
    for t in threads:
        run = read_run(pg_dsn, t)
        assert run.status == "finished", (t, run.status)
        assert sorted(run.result.path) == sorted(NODES)
        (action,) = run.result.actions
        assert action["status"] == "executed" and action["idempotency_key"] == f"{t}/act/1"

    lines = [line.split() for line in executions.read_text().splitlines()]
    ran = Counter((by_n[int(n)], node) for n, node, _ in lines)
    assert set(ran) == {(t, n) for t in threads for n in NODES}  # every node of every run
    repeated = {k: c for k, c in ran.items() if c > 1}
    assert all(c == 2 for c in repeated.values())
    assert not set(repeated) & saved  # no node saved before the kill ran again
    assert {t for t, _ in repeated} <= set(in_flight.values())  # only the victim's runs
    acted = actions.read_text().splitlines()  # the action server: one line per real act
    assert sorted(acted) == sorted(f"{i} {by_n[i]}/act/1" for i in range(RUNS))
    print(
        f"\n{RUNS} runs over 2 workers, one SIGKILLed after {killed_at.get('succeeded', 0)} "
        f"finished with {len(in_flight)} in flight ({len(saved)} of their nodes saved) and "
        f"replaced: {RUNS} finished, 0 lost; saved nodes run again: 0; unsaved nodes run "
        f"again: {len(repeated)} ({sorted(n for _, n in repeated)}); the action server "
        f"acted {len(acted)} times for {RUNS} runs; {wall:.1f} s"
    )
