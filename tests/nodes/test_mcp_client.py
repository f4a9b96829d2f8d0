"""The MCP client pool: a server that cannot start says why, in one line."""

from __future__ import annotations

import sys

import pytest

from sopgraph.nodes.mcp_client import McpError, McpPool, ServerConfig


async def test_a_server_that_fails_to_start_reports_its_last_error_line():
    crash = (
        "import sys; print('warming up', file=sys.stderr); sys.exit('error: no such database x.db')"
    )
    pool = McpPool({"metrics": ServerConfig(command=sys.executable, args=["-c", crash])})
    with pytest.raises(McpError) as info:
        await pool.start()
    assert str(info.value) == "cannot start MCP server 'metrics': no such database x.db"
    await pool.close()


async def test_unknown_server_name_lists_the_configured_ones():
    pool = McpPool({})
    await pool.start()
    with pytest.raises(McpError, match=r"unknown MCP server 'robotics' \(configured: none\)"):
        await pool.call("robotics", "list_metrics", {})
    await pool.close()
