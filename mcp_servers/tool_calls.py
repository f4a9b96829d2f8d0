"""``tools/call`` requests answered on a short path beside the MCP SDK's session, by the same
FastMCP handler: the data servers' stdio hot path.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

import orjson
from mcp.server.fastmcp import FastMCP
from mcp.types import CallToolRequest


class LineWriter(Protocol):
    """Where the answers go: ``serving.LoopStdout``."""

    def write_line(self, data: bytes) -> None: ...


class ToolCalls:
    """``tools/call`` requests answered beside the SDK's session, by the same handler.

    The session wraps each request in pydantic message models, a responder, a cancel scope and
    two memory-stream hops; for a tool that runs in well under a millisecond that is most of
    the server's work. The call goes through the very handler the session would use (FastMCP's
    argument validation, result conversion and output schema check) and is encoded once. Tools
    that take a ``Context`` (progress, logging), and requests that ask for progress, still go
    through the session.
    """

    def __init__(self, mcp: FastMCP, stdout: LineWriter):
        self.mcp = mcp
        self.stdout = stdout
        self.handler = mcp._mcp_server.request_handlers[CallToolRequest]
        self.initialized = False
        self.tasks: set[asyncio.Task] = set()

    def take(self, msg: Any) -> bool:
        """Start answering ``msg`` here and return True, or return False to leave it to the SDK."""
        if not isinstance(msg, dict):
            return False
        method = msg.get("method")
        if method == "notifications/initialized":
            self.initialized = True  # the session has seen initialize; requests may come now
        if method != "tools/call" or not self.initialized or "id" not in msg:
            return False
        params = msg.get("params")
        if not isinstance(params, dict) or "progressToken" in (params.get("_meta") or {}):
            return False
        tool = self.mcp._tool_manager.get_tool(str(params.get("name")))
        if tool is None or tool.context_kwarg is not None:
            return False  # unknown tools get the SDK's own error answer
        task = asyncio.get_running_loop().create_task(self._answer(msg))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return True

    async def _answer(self, msg: dict[str, Any]) -> None:
        head = b'{"jsonrpc":"2.0","id":' + orjson.dumps(msg["id"])
        try:
            result = await self.handler(CallToolRequest.model_validate(msg))
            # pydantic encodes the result straight to JSON, as the session would
            body = b',"result":' + result.model_dump_json(by_alias=True, exclude_none=True).encode()
        except Exception as exc:  # noqa: BLE001 - the session answers the same way
            body = b',"error":' + orjson.dumps({"code": 0, "message": str(exc)})
        self.stdout.write_line(head + body + b"}")
