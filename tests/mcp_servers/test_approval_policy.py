"""A server's approval policy holds on every path that executes a gated action (issue 23,
finding 1): resume_run on a run another process paused, run_sop on its thread, and a run or
resume that a stopped process left journaled and this one continues. The gated action here
writes a file when it runs, so "executed" is what happened on disk, not what the trail says."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sop_factory import make_sop

from sopgraph.runtime.runner import InputError, Session

REPO = Path(__file__).resolve().parents[2]
GATE = "act"  # the gated action of _gated_sop


def _gated_sop(root: Path, marker: Path, wait: str = "") -> Path:
    """``first`` -> ``wait`` (runs ``wait`` first) -> ``act`` (gated, high cost: appends to
    ``marker``) -> ``after``."""
    sop = {
        "id": "gated_marker",
        "entry": {"alarm": ["first"]},
        "nodes": {
            "first": {"kind": "observation", "text": "first", "next": {"true": ["wait"]}},
            "wait": {"kind": "observation", "text": "wait", "next": {"true": ["act"]}},
            "act": {
                "kind": "action",
                "text": "Restart the robot.",
                "cost": "high",
                "approval": "required",
                "next": {"true": ["after"], "false": ["after"]},
            },
            "after": {"kind": "action", "text": "Tell the shift lead."},
        },
    }
    tools = {
        "first": "return Verdict(value=True)",
        "wait": wait + "return Verdict(value=True)",
        "act": f"open({str(marker)!r}, 'a').write('x')\nreturn Verdict(value=True)",
    }
    return make_sop(root, sop, tools)


def _call(result) -> dict:
    assert not result.isError, result.content
    return result.structuredContent


async def test_a_reject_server_executes_no_gated_action_by_any_path(tmp_path, http_serve, tokens):
    marker = tmp_path / "restarted"
    sops = tmp_path / "sops"
    root = _gated_sop(sops / "gated_marker", marker)
    store = str(tmp_path / "checkpoints.sqlite")
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "SOPGRAPH_HOME": str(home), "SOPGRAPH_SOPS": str(sops)}
    env.pop("SOPGRAPH_MODEL", None)
    # An operator pauses a run with the CLI, sharing the checkpoint store with the server.
    cli = [sys.executable, "-m", "sopgraph", "run", str(root), "-i", '{"type": "alarm"}']
    # (the thread id as the server names its runs: '<sop_id>:<thread>')
    cli += ["--thread", "gated_marker:t1", "--checkpoint", store, "--approval", "ask", "--json"]
    proc = subprocess.run(cli, env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    paused = json.loads(proc.stdout)
    assert paused["status"] == "interrupted"
    gate = paused["interrupts"][0]["id"]

    server = http_serve(env, "--approval", "reject", "--checkpoint", store)
    run_id = "gated_marker:t1"
    async with server.session(tokens.by_identity["alice@example.com"]) as s:
        refused = await s.call_tool(
            "resume_run", {"run_id": run_id, "decision": "approve", "interrupt_id": gate}
        )
        assert refused.isError
        (text,) = [c.text for c in refused.content]
        assert "approval policy is 'reject'" in text and "\n" not in text, text
        assert _call(await s.call_tool("get_run", {"run_id": run_id}))["status"] == "interrupted"
        # run_sop on the paused thread returns it as it is; it does not answer it
        again = {"sop_id": "gated_marker", "input": {"type": "alarm"}, "thread_id": "t1"}
        assert _call(await s.call_tool("run_sop", again))["status"] == "interrupted"
        # a new run is decided by the server's policy
        new = _call(await s.call_tool("run_sop", {"sop_id": "gated_marker", "input": {}}))
        assert [(a["node"], a["approved"], a["by"]) for a in new["actions"]][0] == (
            "act",
            False,
            "policy:reject",
        )
        assert not marker.exists()
        # rejecting is always allowed; the trail names the token's identity, not the client
        done = _call(
            await s.call_tool(
                "resume_run", {"run_id": run_id, "decision": "reject", "interrupt_id": gate}
            )
        )
    assert done["status"] == "done" and done["path"] == ["first", "wait", "act", "after"]
    act = done["actions"][0]
    assert (act["approved"], act["by"], act["approver"]) == (False, "human", "alice@example.com")
    assert not marker.exists()  # no path executed the costly action


@pytest.fixture
def first_call_hangs(tmp_path, monkeypatch) -> str:
    """A module whose ``hang_once()`` never returns on its first call: the process that makes
    it stands for one killed mid-node; a second session on the same files goes on."""
    (tmp_path / "hang_gate.py").write_text(
        "import asyncio\n\ncalls = 0\n\n\nasync def hang_once():\n    global calls\n"
        "    calls += 1\n    if calls == 1:\n        await asyncio.Event().wait()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("hang_gate", None)
    return "import hang_gate\nawait hang_gate.hang_once()\n"


async def _until(check, what: str) -> None:
    for _ in range(1000):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never: {what}")


@pytest.mark.parametrize("policy", ["reject", "ask"])
async def test_a_stopped_run_is_continued_within_the_continuing_process_policy(
    tmp_path, first_call_hangs, monkeypatch, policy
):
    """Started under 'approve' and stopped before its gated action: a process whose policy
    is 'reject' continues it and rejects the action; one whose policy is 'ask' pauses it."""
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    marker = tmp_path / "restarted"
    root = _gated_sop(tmp_path / "sop", marker, wait=first_call_hangs)
    store = str(tmp_path / "ck.sqlite")
    async with Session(root, checkpoint=store, mcp=False, approval="approve") as first:
        stopped = asyncio.create_task(first.run({"type": "alarm"}, thread_id="t1"))
        await _until(
            lambda: getattr(sys.modules.get("hang_gate"), "calls", 0) == 1,
            "the second node started",
        )
        async with Session(root, checkpoint=store, mcp=False, approval=policy) as second:
            done = await second.run({"type": "alarm"}, thread_id="t1", approver="ops-carol")
        stopped.cancel()
        await asyncio.gather(stopped, return_exceptions=True)
    assert done.resumed and done.path[:2] == ["first", "wait"]
    if policy == "reject":
        assert done.status == "done"
        act = done.actions[0]
        assert (act["node"], act["approved"], act["by"]) == ("act", False, "policy:reject")
        assert act["approver"] == "ops-carol"
    else:
        assert done.status == "interrupted" and [i["node"] for i in done.interrupts] == ["act"]
    assert not marker.exists()


async def test_a_session_answers_gated_actions_within_its_policy(tmp_path, monkeypatch):
    """`resume` goes through the answering process's policy: under 'reject' an approval is
    refused; under 'approve' a human's reject stands (the policy does not overrule it)."""
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    marker = tmp_path / "restarted"
    root = _gated_sop(tmp_path / "sop", marker)
    store = str(tmp_path / "ck.sqlite")
    async with Session(root, checkpoint=store, mcp=False) as asking:
        for thread in ("t1", "t2"):
            assert (await asking.run({}, thread_id=thread)).status == "interrupted"
    async with Session(root, checkpoint=store, mcp=False, approval="reject") as rejecting:
        with pytest.raises(InputError, match="approval policy is 'reject'"):
            await rejecting.resume("t1", "approve", node=GATE, approver="mallory")
        assert (await rejecting.result("t1")).status == "interrupted"
    async with Session(root, checkpoint=store, mcp=False, approval="approve") as approving:
        done = await approving.resume("t2", "reject", node=GATE, approver="ann")
    act = done.actions[0]
    assert (act["approved"], act["by"], act["approver"]) == (False, "human", "ann")
    assert not marker.exists()
