"""A process killed inside a gated action (issue 53): what runs again, and what the idempotency
key buys. The run is approved with ``sopgraph resume``; its action calls a real MCP action
server over stdio (``tests/servers/idempotent_actions.py``), which appends a line each time it
really acts, then hangs; the resume process is SIGKILLed there. Then:

- an answer with another decision is refused: the claim's process stopped mid-way, and only
  the same decision may continue it;
- the same approval takes the claim over and continues the run: the action runs again with the
  same idempotency key. A server that honours the key acts once in all (exactly once); one that
  ignores it acts twice (at least once), as docs/security.md says.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sop_factory import VALVE_SOP, make_sop

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "tests" / "servers" / "idempotent_actions.py"
SOP = VALVE_SOP
# the first time, the action hangs after the server acted: the resume is killed there
VALVE = """
opened = await ctx.mcp.call("actions", "open_valve", {"valve": "v1"})
marker = os.path.join(os.environ["SOPGRAPH_HOME"], "valve_started")
first = not os.path.exists(marker)
open(marker, "a").write("x")
if first:
    await asyncio.sleep(120)
return Verdict(value=True, observed=opened["key"])
"""


def _sopgraph(env: dict[str, str], *args: object, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sopgraph", *map(str, args)], env=env, cwd=ROOT,
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, **kw,
    )  # fmt: skip


@pytest.mark.parametrize("honour", [True, False], ids=["server-honours-key", "server-ignores-key"])
def test_a_resume_killed_inside_its_action_is_continued_once_with_the_same_key(
    tmp_path: Path, honour: bool
) -> None:
    sop = make_sop(
        tmp_path / "sop", SOP, {"check": "return Verdict(value=True)", "open_valve": VALVE}
    )
    args = [str(SERVER)] + (["--honour-key"] if honour else [])
    servers = {"mcpServers": {"actions": {"command": sys.executable, "args": args}}}
    (sop / "mcp.json").write_text(json.dumps(servers))
    actions = tmp_path / "actions.log"
    env = {k: v for k, v in os.environ.items() if k != "SOPGRAPH_MODEL"}
    env.update(SOPGRAPH_HOME=str(tmp_path / "home"), ACTIONS_LOG=str(actions))

    paused = json.loads(_sopgraph(env, "run", sop, "-i", "{}", "--thread", "t1", "--json").stdout)
    (gate,) = paused["interrupts"]
    resume = ["resume", sop, "--thread", "t1", "--interrupt", gate["id"]]
    first = subprocess.Popen(
        [sys.executable, "-m", "sopgraph", *map(str, resume), "--decision", "approve"],
        env=env, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 90
    while not (tmp_path / "home" / "valve_started").exists():
        assert first.poll() is None and time.monotonic() < deadline, "the action never started"
        time.sleep(0.05)
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert len(actions.read_text().splitlines()) == 1  # the server acted before the kill

    other = _sopgraph(env, *resume, "--decision", "reject")
    assert other.returncode == 2 and "stopped mid-way" in other.stderr, other.stderr
    again = _sopgraph(env, *resume, "--decision", "approve", "--json")
    assert again.returncode == 0, again.stderr
    done = json.loads(again.stdout)
    assert done["status"] == "done" and done["path"] == ["check", "open_valve"]
    (action,) = done["actions"]
    key = "t1/open_valve/1"
    assert action["idempotency_key"] == key and action["result"] == key
    acted = actions.read_text().splitlines()
    assert acted == [f"v1 {key}"] * (1 if honour else 2)  # exactly once, or at least once

    shown = json.loads(_sopgraph(env, "runs", "show", "t1", "--json").stdout)
    outcomes = [(a["decision"], a["outcome"]) for a in shown["answers"]]
    assert outcomes == [("approve", "accepted"), ("reject", "duplicate"), ("approve", "continued")]
