"""On Postgres, a run killed with SIGKILL mid-tool resumes without re-running completed nodes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import psycopg
import pytest
from pg_fixture import pg_dsn  # noqa: F401 - the fixture
from sop_factory import make_sop

from tools.invocation_log import InvocationLog

pytestmark = pytest.mark.postgres

SOP = {
    "id": "durable_pg",
    "entry": {"alarm": ["first"]},
    "nodes": {
        "first": {"kind": "observation", "text": "first", "next": {"true": ["slow", "quick"]}},
        "slow": {"kind": "root_cause", "text": "slow", "next": {"true": ["after"]}},
        "quick": {"kind": "root_cause", "text": "quick", "next": {"true": ["after"]}},
        "after": {"kind": "constraint", "text": "after", "next": {"true": ["act"]}},
        "act": {"kind": "action", "text": "act"},
    },
}
# The first time it runs the slow tool hangs long enough to be killed; the second it returns.
SLOW = """
marker = os.path.join(os.environ["SOPGRAPH_HOME"], "slow_started")
first_time = not os.path.exists(marker)
open(marker, "a").write("x")
await asyncio.sleep(30 if first_time else 0.1)
return Verdict(value=True)
"""
OK = "return Verdict(value=True)"
THREAD = "pg-kill-me"


def _cli(home, *args):
    env = {**os.environ, "SOPGRAPH_HOME": str(home)}
    return subprocess.Popen(
        [sys.executable, "-m", "sopgraph", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _completed(log: InvocationLog) -> Counter:
    return Counter(r["node"] for r in log.query(run_id=THREAD) if r["error"] is None)


def test_sigkill_mid_tool_then_resume_on_postgres(tmp_path, pg_dsn):  # noqa: F811
    home = tmp_path / "home"
    home.mkdir()
    root = make_sop(tmp_path / "sop", SOP, {"first": OK, "slow": SLOW, "quick": OK, "after": OK})
    args = ["run", str(root), "--input", '{"type": "alarm"}', "--thread", THREAD, "--json"]
    args += ["--checkpoint", pg_dsn]
    proc = _cli(home, *args)
    marker = home / "slow_started"
    deadline = time.time() + 60
    while not marker.exists():
        assert proc.poll() is None, proc.stderr.read()
        assert time.time() < deadline, "the slow tool never started"
        time.sleep(0.05)
    time.sleep(0.5)  # let the sibling finish and its write be checkpointed
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    log = InvocationLog(home / "invocations.sqlite")
    assert _completed(log) == {"first": 1, "quick": 1}

    resumed = _cli(home, *args)
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    result = json.loads(out)
    assert result["status"] == "done" and result["resumed"] is True
    assert [a["node"] for a in result["actions"]] == ["act"]
    assert result["path"].count("quick") == 1 and result["path"].count("first") == 1
    assert _completed(log) == {"first": 1, "quick": 1, "slow": 1, "after": 1}
    assert marker.read_text() == "xx"  # slow started twice: once killed, once to completion
    # the checkpoints are in Postgres, not in the default SQLite file
    assert not (home / "checkpoints.sqlite").exists()
    with psycopg.connect(pg_dsn) as conn:
        (n,) = conn.execute(
            "SELECT count(*) FROM checkpoints WHERE thread_id = %s", (THREAD,)
        ).fetchone()
    assert n > 0
