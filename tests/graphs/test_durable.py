"""A run killed with SIGKILL mid-tool resumes on its thread without re-running completed nodes."""

from __future__ import annotations

from kill_resume import kill_mid_tool_then_resume


def test_sigkill_mid_tool_then_resume(tmp_path):
    run = kill_mid_tool_then_resume(tmp_path, "durable", "kill-me")
    assert run.before == {"first": 1, "quick": 1}, run.before
    assert run.result["status"] == "done" and run.result["resumed"] is True
    assert [a["node"] for a in run.result["actions"]] == ["act"]
    assert run.after == {"first": 1, "quick": 1, "slow": 1, "after": 1}, run.after
    assert run.slow_starts == "xx"  # slow started twice: once killed, once to completion
