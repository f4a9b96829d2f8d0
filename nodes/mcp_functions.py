"""A node's MCP tools as the plain functions the CodeAct sandbox offers: ``<server>_<tool>``.

A node may use the servers its ``data`` hints name (``robotics.station_idle_pct`` ->
``robotics``), or every server when it has no usable hint. Each function forwards its keyword
arguments to the open MCP pool and returns the parsed JSON result.
"""

from __future__ import annotations

import re
from typing import Any

from sopgraph.graphs.executors import ToolContext
from sopgraph.graphs.model import Node
from sopgraph.nodes.mcp import offered_tools
from sopgraph.nodes.sandbox import ToolFn
from sopgraph.prompts.codeact import FunctionSpec


def allowed_servers(node: Node, available: list[str]) -> list[str]:
    """The servers the node's ``data`` hints name; all of ``available`` when they name none."""
    hinted = [h.split(".", 1)[0] for h in node.data if "." in h]
    chosen = [s for s in dict.fromkeys(hinted) if s in available]
    return chosen or list(available)


def function_name(server: str, tool: str) -> str:
    # The same tool name exists on several servers (execute_query): the prefix tells them apart.
    return re.sub(r"\W", "_", f"{server}_{tool}")


class McpFunctions:
    """Builds a node's functions; each server's tool list is read once per pool."""

    def __init__(self) -> None:
        self._listed: dict[tuple[int, str], list[Any]] = {}

    async def for_node(
        self, node: Node, ctx: ToolContext
    ) -> tuple[dict[str, FunctionSpec], dict[str, ToolFn], list[str]]:
        """``(specs, functions, problems)``: by function name, and servers that failed to list."""
        pool = ctx.mcp
        servers = list(getattr(pool, "servers", None) or {}) if pool is not None else []
        specs: dict[str, FunctionSpec] = {}
        functions: dict[str, ToolFn] = {}
        problems: list[str] = []
        for server in allowed_servers(node, servers):
            key = (id(pool), server)
            try:
                if key not in self._listed:
                    self._listed[key] = list(await pool.list_tools(server))
            except Exception as exc:  # noqa: BLE001 - one dead server leaves the others usable
                problems.append(f"{server}: {type(exc).__name__}: {exc}")
                continue
            readable = await offered_tools(pool, server)
            for tool in self._listed[key]:
                if readable is not None and tool.name not in readable:
                    continue  # a decision is offered only what it may call: read-only tools
                name = function_name(server, tool.name)
                specs[name] = FunctionSpec(
                    name=name,
                    server=server,
                    tool=tool.name,
                    description=tool.description or "",
                    input_schema=dict(tool.inputSchema or {}),
                )
                functions[name] = _forward(pool, server, tool.name)
        return specs, functions, problems


def _forward(pool: Any, server: str, tool: str) -> ToolFn:
    async def call(args: dict[str, Any]) -> Any:
        return await pool.call(server, tool, args)

    return call
