"""``sopgraph mcp serve --queue``: submit_run puts a run on the job queue and returns its run
id at once; a queue worker runs it, and get_run reads its result from the shared store."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.shared.memory import create_connected_server_and_client_session
from pg_fixture import pg_dsn  # noqa: F401 - the fixture
from sop_factory import VALVE_SOP, make_sop

from sopgraph.mcp_servers.sop_catalog import discover
from sopgraph.mcp_servers.sop_sessions import Hub
from sopgraph.mcp_servers.sopgraph_server import create_server
from sopgraph.runtime.queue import job_counts, serve

pytestmark = pytest.mark.postgres

ACT = """
open(os.environ["ACTED"], "a").write("x")
return Verdict(value=True)
"""


async def test_submit_run_queues_and_a_worker_runs_it(tmp_path: Path, monkeypatch, pg_dsn):  # noqa: F811
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ACTED", str(tmp_path / "acted"))
    monkeypatch.delenv("SOPGRAPH_MODEL", raising=False)
    sop = {**VALVE_SOP, "id": "valve_queued"}
    make_sop(tmp_path / "sops" / "valve_queued", sop,
             {"check": "return Verdict(value=True)", "open_valve": ACT})  # fmt: skip
    hub = Hub(discover([tmp_path / "sops"]), pg_dsn)
    server = create_server(hub, approval="client", queue=pg_dsn)
    async with create_connected_server_and_client_session(server) as client:
        bad = await client.call_tool("submit_run", {"sop_id": "valve_queued", "input": []})
        assert bad.isError
        queued = await client.call_tool(
            "submit_run",
            {"sop_id": "valve_queued", "input": {}, "thread_id": "q1", "approval": "approve"},
        )
        assert not queued.isError, queued.content
        assert queued.structuredContent["run_id"] == "valve_queued:q1"
        assert queued.structuredContent["status"] == "queued"
        assert not (tmp_path / "acted").exists()  # queued, not run here
        assert await job_counts(pg_dsn) == {"todo": 1}

        await serve(pg_dsn, approval="approve", until_idle=True)

        got = await client.call_tool("get_run", {"run_id": "valve_queued:q1"})
        assert not got.isError, got.content
        assert got.structuredContent["status"] == "done"
        assert got.structuredContent["path"] == ["check", "open_valve"]
    assert (tmp_path / "acted").read_text() == "x"
