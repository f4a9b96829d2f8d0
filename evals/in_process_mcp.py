"""The SOP's MCP servers called in-process, with no transport: the lower bound of the benchmark.

It builds each server declared in ``mcp.json`` (``-m <module> --db <path>``) inside this
process with the module's ``build_server(db)`` and calls its tool functions directly, so the
same compiled tools run with neither stdio, JSON-RPC nor a second process in the way.
"""

from __future__ import annotations

import importlib
import inspect
import json
from pathlib import Path
from typing import Any

from sopgraph.nodes.mcp import McpError, load_server_configs


def _module_and_db(args: list[str]) -> tuple[str, str | None]:
    module = args[args.index("-m") + 1] if "-m" in args else ""
    db = args[args.index("--db") + 1] if "--db" in args else None
    return module, db


class InProcessMcp:
    """Same interface as ``McpPool`` (``await call(server, tool, args)``), no transport."""

    def __init__(self, sop_dir: Path):
        self.servers: dict[str, Any] = {}
        for name, cfg in load_server_configs(sop_dir).items():
            module, db = _module_and_db(cfg.args)
            build = getattr(importlib.import_module(module), "build_server", None)
            if build is None or db is None:
                raise McpError(
                    f"server '{name}' ({module}) cannot run in-process: no build_server(db)"
                )
            params = inspect.signature(build).parameters
            self.servers[name] = build(db, preload=False) if "preload" in params else build(db)
        self.calls = 0

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def call(self, server: str, tool: str, args: dict[str, Any] | None = None) -> Any:
        mcp = self.servers.get(server)
        if mcp is None:
            raise McpError(f"unknown MCP server '{server}'")
        self.calls += 1
        try:
            raw = await mcp._tool_manager.call_tool(  # the tool function itself, no conversion
                tool, args or {}, context=mcp.get_context(), convert_result=False
            )
        except Exception as exc:  # noqa: BLE001 - same contract as McpPool: one McpError
            raise McpError(f"{server}.{tool} failed: {exc}") from None
        return json.loads(json.dumps(raw, default=str))
