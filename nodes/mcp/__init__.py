"""MCP clients: a pool of open sessions that tools and sub-agents call during a run or a batch.

This is the package's public surface; the server configuration (``_config``: ``mcp.json`` in
the ``mcpServers`` shape, docs/mcp-servers.md), the pool (``_pool``) and the lean stdio
JSON-RPC client (``_stdio``) are internals.

Example:
    >>> from sopgraph.nodes.mcp import McpPool, load_server_configs
    >>> async with McpPool(load_server_configs(sop_dir)) as pool:
    ...     rows = await pool.call("metrics", "execute_query", {"sql": "select 1"})
"""

from sopgraph.nodes.mcp._config import (
    ServerConfig,
    config_path,
    legacy_to_mcp_json,
    load_server_configs,
)
from sopgraph.nodes.mcp._pool import McpError, McpPool, McpRefused, WriteRefused, offered_tools

__all__ = [
    "McpError",
    "McpPool",
    "McpRefused",
    "ServerConfig",
    "config_path",
    "legacy_to_mcp_json",
    "load_server_configs",
    "WriteRefused",
    "offered_tools",
]
