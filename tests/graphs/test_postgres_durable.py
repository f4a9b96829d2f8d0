"""On Postgres, a run killed with SIGKILL mid-tool resumes without re-running completed nodes."""

from __future__ import annotations

import psycopg
import pytest
from kill_resume import kill_mid_tool_then_resume
from pg_fixture import pg_dsn  # noqa: F401 - the fixture

pytestmark = pytest.mark.postgres

THREAD = "pg-kill-me"


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
    with psycopg.connect(pg_dsn) as conn:
        (n,) = conn.execute(
            "SELECT count(*) FROM checkpoints WHERE thread_id = %s", (THREAD,)
        ).fetchone()
    assert n > 0
