"""A run killed with SIGKILL mid-tool resumes on its thread without re-running completed nodes."""

from __future__ import annotations

from kill_resume import kill_mid_tool_then_resume, kill_server_mid_tool_then_resume


def test_sigkill_mid_tool_then_resume(tmp_path):
    run = kill_mid_tool_then_resume(tmp_path, "durable", "kill-me")
    assert run.before == {"first": 1, "quick": 1}, run.before
    assert run.result["status"] == "done" and run.result["resumed"] is True
    assert [a["node"] for a in run.result["actions"]] == ["act"]
    assert run.after == {"first": 1, "quick": 1, "slow": 1, "after": 1}, run.after
    assert run.slow_starts == "xx"  # slow started twice: once killed, once to completion


async def test_sigkill_server_mid_run_then_new_server_continues_from_the_journal(tmp_path):
    """``sopgraph mcp serve`` with SQLite checkpoints is killed mid ``run_sop``; the run had no
    checkpoint yet (journaled runs checkpoint when the invocation ends), so a new server's
    get_run says how to continue it, and its run_sop on the same thread repeats no node."""
    checkpoint = str(tmp_path / "checkpoints.sqlite")
    run = await kill_server_mid_tool_then_resume(tmp_path, "durable_server", "kill-me", checkpoint)
    assert run.orphans == []
    assert run.before == {"first": 1, "quick": 1}
    assert "was stopped before it finished; continue it with run_sop" in run.get_run, run.get_run
    result = run.result
    assert result["run_id"] == run.run_id == "durable_server:kill-me"
    assert result["status"] == "done" and result["resumed"] is True
    assert [a["node"] for a in result["actions"]] == ["act"]
    assert run.after == {"first": 1, "quick": 1, "slow": 1, "after": 1}
    assert run.slow_starts == "xx"
