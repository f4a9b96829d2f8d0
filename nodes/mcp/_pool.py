"""A pool of open MCP client sessions that tools and sub-agents call during a run or a batch.

Starting a stdio server costs ~0.5 s, so the pool opens every server once and keeps the
sessions for its lifetime. One background task owns the sessions: anyio cancel scopes must be
exited by the task that entered them.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from contextlib import AsyncExitStack
from typing import Any

from langchain_mcp_adapters.client import MultiServerMCPClient
from mcp.types import Tool

from sopgraph.graphs.executors import REFUSAL_PREFIX, Refused
from sopgraph.graphs.idempotency import ACTION_KEY
from sopgraph.graphs.telemetry import mcp_meta, mcp_span
from sopgraph.nodes.mcp._config import ServerConfig, load_server_configs
from sopgraph.nodes.mcp._stdio import StdioClient, StdioError

__all__ = [
    "McpError",
    "McpPool",
    "McpRefused",
    "ServerConfig",
    "WriteRefused",
    "load_server_configs",
    "offered_tools",
    "parse_result",
]


class McpError(Exception):
    """An MCP server could not be reached, or a tool call failed."""


class McpRefused(McpError, Refused):
    """A tool call the server refused for the caller's identity (its error text starts
    ``access denied:``): the node ends refused (``graphs.executors.Refused``)."""


class WriteRefused(McpRefused):
    """A call outside an approved action (a decision node, the tool-maker, an eval) to a tool
    that is not read-only: refused at the client, before the server sees it."""


async def offered_tools(pool: Any, server: str) -> frozenset[str] | None:
    """The tools of ``server`` to offer a model deciding a node (``McpPool.decision_tools``),
    or None (offer every tool) inside an approved action or for a pool without the notion (a
    test's stand-in); the pool refuses a decision's write whatever was offered."""
    if ACTION_KEY.get() is not None or not hasattr(pool, "decision_tools"):
        return None
    return await pool.decision_tools(server)


def parse_result(result: dict[str, Any]) -> Any:
    """The JSON value of a ``tools/call`` result: structured content, else parsed text."""
    sc = result.get("structuredContent")
    if sc is not None:
        if isinstance(sc, dict) and set(sc) == {"result"}:
            return sc["result"]
        return sc
    texts = [c.get("text", "") for c in result.get("content") or [] if c.get("type") == "text"]
    if not texts:
        return None
    joined = texts[0] if len(texts) == 1 else "\n".join(texts)
    try:
        return json.loads(joined)
    except json.JSONDecodeError:
        return joined


def _connection(cfg: ServerConfig) -> dict[str, Any]:
    """The adapter's connection dict (``MultiServerMCPClient``) for one server."""
    if cfg.url:
        return {"transport": cfg.http_transport, "url": cfg.url, "headers": cfg.headers or None}
    return {
        "transport": "stdio",
        "command": cfg.command or sys.executable,
        "args": cfg.args,
        "env": {**os.environ, **cfg.env},
        "cwd": cfg.cwd,
    }


class McpPool:
    """Open sessions to named MCP servers; ``await pool.call(server, tool, args)``.

    stdio servers are reached through the lean client (``_stdio``) unless
    ``client="sdk"``; HTTP servers, and every server with ``client="sdk"``, through
    langchain-mcp-adapters' ``MultiServerMCPClient.session()`` (the SDK's ``ClientSession``).

    Read-only deciding: outside an approved action (``graphs.idempotency.ACTION_KEY`` unset),
    a call reaches only the server's read-only tools (``readOnlyHint``, or the operator's
    ``readOnlyTools`` in mcp.json); any other is refused here (``WriteRefused``), recorded on
    the call's span, and the node ends refused. ``decision_tools`` lists what a decision may
    call, for the agents that offer tools to a model.

    Example:
        >>> async with McpPool(load_server_configs(Path("examples/service_interruption"))) as mcp:
        ...     await mcp.call("customer_service", "authenticate_customer", {"case_id": "c1"})
    """

    def __init__(self, servers: dict[str, ServerConfig], client: str = "lean"):
        if client not in ("lean", "sdk"):
            raise ValueError(f"MCP client must be lean or sdk, not {client!r}")
        self.servers = servers
        self.client = client
        self.sessions: dict[str, Any] = {}  # ClientSession, or StdioClient on the lean path
        self.calls = 0
        self._owner: asyncio.Task | None = None
        self._ready: asyncio.Future | None = None
        self._stop: asyncio.Event | None = None
        self._lean: dict[str, StdioClient] = {}
        self._read_only: dict[str, frozenset[str]] = {}  # server -> tools a decision may call

    async def __aenter__(self) -> McpPool:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        if self._owner is not None:
            await asyncio.shield(self._ready)
            return
        loop = asyncio.get_running_loop()
        self._ready = loop.create_future()
        self._stop = asyncio.Event()
        self._owner = loop.create_task(self._own())
        await asyncio.shield(self._ready)

    async def _open(self, stack: AsyncExitStack, name: str, cfg: ServerConfig) -> Any:
        if cfg.url is None and self.client == "lean":
            lean = StdioClient(
                cfg.command or sys.executable, cfg.args, _connection(cfg)["env"], cfg.cwd
            )
            self._lean[name] = lean
            stack.push_async_callback(lean.close)
            await lean.start()
            return lean
        adapter = MultiServerMCPClient({name: _connection(cfg)})
        return await stack.enter_async_context(adapter.session(name))

    async def _own(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                try:
                    for name, cfg in self.servers.items():
                        self.sessions[name] = await self._open(stack, name, cfg)
                except Exception as exc:  # noqa: BLE001 - reported to the caller of start()
                    lean = self._lean.get(name)
                    why = (lean.last_error_line() if lean else "") or _message(exc)
                    self._ready.set_exception(McpError(f"cannot start MCP server '{name}': {why}"))
                    return
                self._ready.set_result(None)
                await self._stop.wait()
        finally:
            self.sessions.clear()
            if not self._ready.done():
                self._ready.set_exception(McpError("MCP pool stopped before it was ready"))

    def pids(self) -> dict[str, int]:
        """Process ids of the stdio servers on the lean path (for CPU accounting)."""
        return {n: c.pid for n, c in self._lean.items() if c.pid is not None}

    async def close(self) -> None:
        if self._owner is None:
            return
        self._stop.set()
        try:
            await self._owner
        except Exception:  # noqa: BLE001 - shutting down; nothing left to report to
            pass
        self._owner = None

    def _session(self, server: str) -> Any:
        session = self.sessions.get(server)
        if session is None:
            known = ", ".join(sorted(self.sessions)) or "none"
            raise McpError(f"unknown MCP server '{server}' (configured: {known})")
        return session

    async def decision_tools(self, server: str, tool: str = "tools/list") -> frozenset[str]:
        """The tools of ``server`` a decision may call: the operator's ``readOnlyTools`` where
        mcp.json gives it, else those the server annotates ``readOnlyHint`` (read once)."""
        if server not in self._read_only:
            listed = self.servers[server].read_only_tools if server in self.servers else None
            if listed is None:
                try:
                    tools = await self.list_tools(server)
                except StdioError as exc:
                    raise self._stdio_failure(server, tool, exc) from None
                listed = [t.name for t in tools if t.annotations and t.annotations.readOnlyHint]
            self._read_only[server] = frozenset(listed)
        return self._read_only[server]

    async def call(self, server: str, tool: str, args: dict[str, Any] | None = None) -> Any:
        """Call ``tool`` on ``server`` and return its parsed JSON result.

        Raises:
            WriteRefused: outside an approved action, ``tool`` is not read-only.
            McpRefused: the server refused the caller's identity.
            McpError: the server is unknown or unreachable, or the call failed.
        """
        if self._owner is None:
            await self.start()
        session = self._session(server)
        acting = ACTION_KEY.get() is not None
        self.calls += 1
        transport = "tcp" if self.servers[server].url else "pipe"
        with mcp_span(server, tool, transport) as span:
            if not acting and tool not in await self.decision_tools(server, tool):
                span.set_attribute("error.type", "write_refused")
                raise WriteRefused(
                    f"{server}.{tool}: {REFUSAL_PREFIX}not a read-only tool, and only an approved "
                    "action may change the world; a decision may call only tools the server "
                    "marks readOnlyHint or mcp.json lists in the server's readOnlyTools"
                )
            # the trace context rides in params._meta so a traced server can join the trace
            if isinstance(session, StdioClient):
                try:
                    result = await session.call_tool(tool, args or {}, meta=mcp_meta())
                except StdioError as exc:
                    raise self._stdio_failure(server, tool, exc) from None
            else:
                raw = await session.call_tool(tool, args or {}, meta=mcp_meta())
                result = raw.model_dump(by_alias=True, exclude_none=True)
            if result.get("isError"):
                span.set_attribute("error.type", "tool_error")
                text = " ".join(c.get("text", "") for c in result.get("content") or []).strip()
                if text.startswith(REFUSAL_PREFIX):
                    raise McpRefused(f"{server}.{tool}: {text}")
                raise McpError(f"{server}.{tool} failed: {text}")
        return parse_result(result)

    def _stdio_failure(self, server: str, tool: str, exc: StdioError) -> McpError:
        """One line for a stdio request that failed: the dead server's last words, if it died."""
        session = self._lean.get(server)
        why = session.last_error_line() if session is not None and session._gone else ""
        return McpError(f"{server}.{tool} failed: {why or exc}")

    async def list_tools(self, server: str) -> list[Tool]:
        if self._owner is None:
            await self.start()
        session = self._session(server)
        if isinstance(session, StdioClient):
            return await session.list_tools()
        return (await session.list_tools()).tools


def _message(exc: BaseException) -> str:
    # anyio task groups wrap the cause of a failed start in an ExceptionGroup
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return str(exc) or type(exc).__name__
