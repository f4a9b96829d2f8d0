"""A pool of open MCP client sessions that tools and sub-agents call during a run or a batch.

Starting a stdio server costs ~0.5 s and a call on an open session ~3 ms, so the pool opens
every server once and keeps the sessions for its lifetime. One background task owns the
sessions: anyio cancel scopes must be exited by the task that entered them.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import yaml
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from pydantic import BaseModel, ConfigDict, Field

from sopgraph.graphs.telemetry import mcp_meta, mcp_span


class McpError(Exception):
    """An MCP server could not be reached, or a tool call failed."""


class ServerConfig(BaseModel):
    """How to reach one MCP server: a stdio command, or a streamable HTTP url."""

    model_config = ConfigDict(extra="forbid")
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None


def home_dir() -> Path:
    """Where sopgraph keeps worlds, checkpoints and logs (``SOPGRAPH_HOME``, else ``.sopgraph``)."""
    return Path(os.environ.get("SOPGRAPH_HOME", ".sopgraph")).resolve()


def load_server_configs(sop_dir: Path) -> dict[str, ServerConfig]:
    """Read ``<sop dir>/mcp.yaml``; ``python`` means this interpreter, ``{sop_dir}``/``{home}`` expand."""
    path = sop_dir / "mcp.yaml"
    if not path.exists():
        return {}
    raw = yaml.safe_load(path.read_text()) or {}
    subs = {"{sop_dir}": str(sop_dir.resolve()), "{home}": str(home_dir())}

    def expand(s: str) -> str:
        for k, v in subs.items():
            s = s.replace(k, v)
        return s

    out: dict[str, ServerConfig] = {}
    for name, spec in (raw.get("servers") or {}).items():
        cfg = ServerConfig.model_validate(spec)
        if cfg.command == "python":
            cfg.command = sys.executable
        cfg.args = [expand(a) for a in cfg.args]
        cfg.env = {k: expand(v) for k, v in cfg.env.items()}
        if cfg.url:
            cfg.url = expand(cfg.url)
        out[name] = cfg
    return out


def parse_result(result: Any) -> Any:
    """The JSON value of a ``CallToolResult``: structured content, else parsed text."""
    if getattr(result, "structuredContent", None) is not None:
        sc = result.structuredContent
        if isinstance(sc, dict) and set(sc) == {"result"}:
            return sc["result"]
        return sc
    texts = [c.text for c in result.content if getattr(c, "type", "") == "text"]
    if not texts:
        return None
    joined = texts[0] if len(texts) == 1 else "\n".join(texts)
    try:
        return json.loads(joined)
    except json.JSONDecodeError:
        return joined


class McpPool:
    """Open sessions to named MCP servers; ``await pool.call(server, tool, args)``.

    Example:
        >>> async with McpPool(load_server_configs(Path("examples/service_interruption"))) as mcp:
        ...     await mcp.call("customer_service", "authenticate_customer", {"case_id": "c1"})
    """

    def __init__(self, servers: dict[str, ServerConfig]):
        self.servers = servers
        self.sessions: dict[str, ClientSession] = {}
        self.calls = 0
        self._owner: asyncio.Task | None = None
        self._ready: asyncio.Future | None = None
        self._stop: asyncio.Event | None = None
        self._lock: asyncio.Lock | None = None
        self._errlogs: dict[str, Any] = {}

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

    async def _open(self, stack: AsyncExitStack, name: str, cfg: ServerConfig) -> ClientSession:
        if cfg.url:
            from mcp.client.streamable_http import streamablehttp_client

            read, write, _ = await stack.enter_async_context(streamablehttp_client(cfg.url))
        else:
            params = StdioServerParameters(
                command=cfg.command or sys.executable,
                args=cfg.args,
                env={**os.environ, **cfg.env},
                cwd=cfg.cwd,
            )
            # the server's stderr, kept so that a server that fails to start can say why
            errlog = tempfile.TemporaryFile("w+")  # noqa: SIM115 - closed by the exit stack
            stack.callback(errlog.close)
            self._errlogs[name] = errlog
            read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        return session

    async def _own(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                try:
                    for name, cfg in self.servers.items():
                        self.sessions[name] = await self._open(stack, name, cfg)
                except Exception as exc:  # noqa: BLE001 - reported to the caller of start()
                    why = self._last_error_line(name) or str(exc) or type(exc).__name__
                    self._ready.set_exception(McpError(f"cannot start MCP server '{name}': {why}"))
                    return
                self._ready.set_result(None)
                await self._stop.wait()
        finally:
            self.sessions.clear()
            if not self._ready.done():
                self._ready.set_exception(McpError("MCP pool stopped before it was ready"))

    def _last_error_line(self, name: str) -> str:
        log = self._errlogs.get(name)
        if log is None or log.closed:
            return ""
        log.flush()
        log.seek(0)
        lines = [ln.strip() for ln in log.read().splitlines() if ln.strip()]
        return lines[-1].removeprefix("error: ") if lines else ""

    async def close(self) -> None:
        if self._owner is None:
            return
        self._stop.set()
        try:
            await self._owner
        except Exception:  # noqa: BLE001 - shutting down; nothing left to report to
            pass
        self._owner = None

    async def call(self, server: str, tool: str, args: dict[str, Any] | None = None) -> Any:
        """Call ``tool`` on ``server`` and return its parsed JSON result."""
        if self._owner is None:
            await self.start()
        session = self.sessions.get(server)
        if session is None:
            known = ", ".join(sorted(self.sessions)) or "none"
            raise McpError(f"unknown MCP server '{server}' (configured: {known})")
        self.calls += 1
        transport = "tcp" if self.servers[server].url else "pipe"
        with mcp_span(server, tool, transport) as span:
            # the trace context rides in params._meta so a traced server can join the trace
            result = await session.call_tool(tool, args or {}, meta=mcp_meta())
            if result.isError:
                span.set_attribute("error.type", "tool_error")
                text = " ".join(getattr(c, "text", "") for c in result.content)
                raise McpError(f"{server}.{tool} failed: {text.strip()}")
        return parse_result(result)

    async def list_tools(self, server: str) -> list[Any]:
        if self._owner is None:
            await self.start()
        return (await self.sessions[server].list_tools()).tools
