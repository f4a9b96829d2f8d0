"""The data servers' stdio entry: pipes on the event loop, and ``tools/call`` on the short path
answering exactly as the SDK's session does."""

from __future__ import annotations

import asyncio
import sqlite3
import sys

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from sopgraph.nodes.mcp import McpPool, ServerConfig

CALLS = [
    ("execute_query", {"sql": "SELECT id, name FROM stations ORDER BY id", "page_size": 2}),
    ("execute_query", {"sql": "SELECT id FROM stations", "page": 1, "page_size": 2}),
    ("execute_query", {"sql": "DELETE FROM stations"}),  # refused: read-only
    ("execute_query", {"sql": "SELECT 1", "page": -1}),  # refused: bad page
    ("execute_query", {"sql": "SELECT nope FROM stations"}),  # a failing query
    ("list_columns", {"table": "stations"}),
    ("list_tables", {}),
    ("no_such_tool", {}),  # the session's own answer
]


@pytest.fixture
def ops_db(tmp_path):
    db = tmp_path / "ops.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE stations (id INTEGER PRIMARY KEY, name TEXT)")
    con.executemany("INSERT INTO stations VALUES (?, ?)", [(i, f"st{i}") for i in range(5)])
    con.commit()
    con.close()
    return str(db)


async def _progress(*_: object) -> None:
    return None


async def test_short_path_answers_as_the_session_does(ops_db):
    """The same calls, once on the short path and once with a progress token (which the SDK's
    session answers): identical results, errors included."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "sopgraph.mcp_servers.ops_store", "--db", ops_db]
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for tool, args in CALLS:
            short = await session.call_tool(tool, args)
            via_session = await session.call_tool(tool, args, progress_callback=_progress)
            assert short == via_session, tool
    assert short.isError and "no_such_tool" in short.content[0].text


async def test_many_calls_at_once_are_answered_in_any_order(ops_db):
    cfg = ServerConfig(
        command=sys.executable, args=["-m", "sopgraph.mcp_servers.ops_store", "--db", ops_db]
    )
    async with McpPool({"ops": cfg}) as pool:
        sqls = [f"SELECT id, {i} AS k FROM stations WHERE id <= {i % 5}" for i in range(60)]
        got = await asyncio.gather(*(pool.call("ops", "execute_query", {"sql": s}) for s in sqls))
    for i, page in enumerate(got):
        assert page["rows"] == [[j, i] for j in range(i % 5 + 1)]
