"""The kill-and-resume scenario shared by the durability tests (SQLite and Postgres checkpoints).

A CLI run is SIGKILLed while one of two parallel branches hangs in its tool, after the other
branch finished; the same command then resumes the thread and must not re-run finished nodes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sop_factory import make_sop

from tools.invocation_log import InvocationLog

NODES = {
    "first": {"kind": "observation", "text": "first", "next": {"true": ["slow", "quick"]}},
    "slow": {"kind": "root_cause", "text": "slow", "next": {"true": ["after"]}},
    "quick": {"kind": "root_cause", "text": "quick", "next": {"true": ["after"]}},
    "after": {"kind": "constraint", "text": "after", "next": {"true": ["act"]}},
    "act": {"kind": "action", "text": "act"},
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


@dataclass
class KillResume:
    """What the scenario saw: finished tool runs after the kill and after the resume."""

    before: Counter  # node -> successful tool runs when the process was killed
    after: Counter  # the same once the resumed run ended
    result: dict[str, Any]  # the resumed run's --json output
    slow_starts: str  # one 'x' per start of the slow tool
    home: Path


def _cli(home: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "SOPGRAPH_HOME": str(home)}
    return subprocess.Popen(
        [sys.executable, "-m", "sopgraph", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def kill_mid_tool_then_resume(
    tmp_path: Path, sop_id: str, thread: str, extra_args: tuple[str, ...] = ()
) -> KillResume:
    """Run the scenario's SOP via ``sopgraph run`` (plus ``extra_args``), kill it, resume it."""
    home = tmp_path / "home"
    home.mkdir()
    sop = {"id": sop_id, "entry": {"alarm": ["first"]}, "nodes": NODES}
    root = make_sop(tmp_path / "sop", sop, {"first": OK, "slow": SLOW, "quick": OK, "after": OK})
    args = ["run", str(root), "--input", '{"type": "alarm"}', "--thread", thread, "--json"]
    args += extra_args
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

    def completed() -> Counter:
        return Counter(r["node"] for r in log.query(run_id=thread) if r["error"] is None)

    before = completed()
    resumed = _cli(home, *args)
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    return KillResume(before, completed(), json.loads(out), marker.read_text(), home)
