"""On Postgres, a run killed with SIGKILL mid-tool resumes without re-running completed nodes:
whether the killed process is the ``sopgraph run`` CLI or a ``sopgraph mcp serve`` HTTP server."""

from __future__ import annotations

import psycopg
import pytest
from kill_resume import kill_mid_tool_then_resume, kill_server_mid_tool_then_resume
from pg_fixture import pg_dsn  # noqa: F401 - the fixture

pytestmark = pytest.mark.postgres

THREAD = "pg-kill-me"


def _checkpoints(dsn: str, thread_id: str) -> int:
    with psycopg.connect(dsn) as conn:
        (n,) = conn.execute(
            "SELECT count(*) FROM checkpoints WHERE thread_id = %s", (thread_id,)
        ).fetchone()
    return n


def test_sigkill_mid_tool_then_resume_on_postgres(tmp_path, pg_dsn):  # noqa: F811
    run = kill_mid_tool_then_resume(tmp_path, "durable_pg", THREAD, ("--checkpoint", pg_dsn))
    assert run.before == {"first": 1, "quick": 1}
    result = run.result
    assert result["status"] == "done" and result["resumed"] is True
    assert [a["node"] for a in result["actions"]] == ["act"]
    assert result["path"].count("quick") == 1 and result["path"].count("first") == 1
    assert run.after == {"first": 1, "quick": 1, "slow": 1, "after": 1}
    assert run.slow_starts == "xx"  # slow started twice: once killed, once to completion
    # the checkpoints are in Postgres, not in the default SQLite file
    assert not (run.home / "checkpoints.sqlite").exists()
    assert _checkpoints(pg_dsn, THREAD) > 0


async def test_sigkill_server_mid_run_then_new_server_continues(tmp_path, pg_dsn):  # noqa: F811
    run = await kill_server_mid_tool_then_resume(tmp_path, "durable_pg_server", THREAD, pg_dsn)
    # the killed server had started the SOP's MCP sub-server, which died with it
    assert any("sopgraph.mcp_servers.customer_service" in cmd for cmd in run.sub_servers), (
        run.sub_servers
    )
    assert run.orphans == []
    assert run.before == {"first": 1, "quick": 1}
    result = run.result
    assert result["run_id"] == run.run_id == f"durable_pg_server:{THREAD}"
    assert result["status"] == "done" and result["resumed"] is True
    assert [a["node"] for a in result["actions"]] == ["act"]
    assert result["path"].count("quick") == 1 and result["path"].count("first") == 1
    # every completed node ran exactly once across both server processes
    assert run.after == {"first": 1, "quick": 1, "slow": 1, "after": 1}
    assert run.slow_starts == "xx"  # slow started twice: once killed, once to completion
    assert not (run.home / "checkpoints.sqlite").exists()
    assert _checkpoints(pg_dsn, run.run_id) > 0
