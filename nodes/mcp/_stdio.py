"""A lean MCP client over stdio: JSON-RPC lines on the event loop's own pipes, for the hot path.

The SDK's ``ClientSession`` (which ``MultiServerMCPClient.session()`` opens) validates every
message into pydantic models and moves each line through anyio memory streams and a reader
task; per tool call that costs more main-process CPU than the tool itself. Measured side by
side by ``sopgraph bench triage`` (``mcp_client`` in its JSON). This client speaks the same
protocol (initialize handshake, ``tools/call``, ``tools/list``, answers server pings) with one
``json`` encode and decode per message. Only the stdio transport: HTTP servers go through the
adapter.
"""

from __future__ import annotations

import asyncio
import itertools
import tempfile
from typing import Any

import orjson
from mcp.types import LATEST_PROTOCOL_VERSION, Tool

# One JSON-RPC message per line; a page of rows can be a few MB.
LINE_LIMIT = 64 * 1024 * 1024
CLOSE_GRACE_S = 2.0


class StdioError(Exception):
    """The server process ended, or answered a request with a JSON-RPC error."""


class StdioClient:
    """One MCP server process; ``await start()``, ``await request(method, params)``, ``close()``."""

    def __init__(
        self,
        command: str,
        args: list[str],
        env: dict[str, str] | None = None,
        cwd: str | None = None,
    ):
        self.command, self.args, self.env, self.cwd = command, args, env, cwd
        self.proc: asyncio.subprocess.Process | None = None
        self.errlog = tempfile.TemporaryFile("w+b")  # noqa: SIM115 - closed in close()
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future] = {}
        self._reader: asyncio.Task | None = None
        self._gone: str | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    async def start(self, client_name: str = "sopgraph") -> dict[str, Any]:
        """Start the process and run the initialize handshake; returns the server's answer."""
        self.proc = await asyncio.create_subprocess_exec(
            self.command,
            *self.args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=self.errlog,
            env=self.env,
            cwd=self.cwd,
            limit=LINE_LIMIT,
        )
        self._reader = asyncio.get_running_loop().create_task(self._read())
        init = await self.request(
            "initialize",
            {
                "protocolVersion": LATEST_PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": client_name, "version": "1"},
            },
        )
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return init

    def _send(self, message: dict[str, Any]) -> None:
        if self._gone is not None or self.proc is None or self.proc.stdin is None:
            raise StdioError(self._gone or "server not started")
        self.proc.stdin.write(orjson.dumps(message, option=orjson.OPT_NON_STR_KEYS) + b"\n")

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send one request and await its ``result`` (a JSON-RPC error raises ``StdioError``)."""
        rid = next(self._ids)
        fut = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        try:
            self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}})
            # pipes have a 64 KiB buffer: only wait for the writer when the server lags behind
            if self.proc.stdin.transport.get_write_buffer_size() > 1 << 16:
                await self.proc.stdin.drain()
            return await fut
        finally:
            self._pending.pop(rid, None)

    async def _read(self) -> None:
        out = self.proc.stdout
        try:
            while line := await out.readline():
                try:
                    msg = orjson.loads(line)
                except ValueError:
                    continue  # a stray print on stdout: the SDK skips it too
                if "method" in msg:
                    if msg.get("method") == "ping" and "id" in msg:
                        self._send({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
                    continue  # notifications (progress, logging) are not used here
                fut = self._pending.get(msg.get("id"))
                if fut is None or fut.done():
                    continue
                if "error" in msg:
                    err = msg["error"] or {}
                    fut.set_exception(StdioError(str(err.get("message") or err)))
                else:
                    fut.set_result(msg.get("result"))
        except (ConnectionError, ValueError) as exc:  # ValueError: a line over LINE_LIMIT
            self._gone = f"lost the server's output: {exc}"
        finally:
            self._gone = self._gone or "the server process exited"
            for fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(StdioError(self._gone))

    def last_error_line(self) -> str:
        """The last line the server wrote on stderr (why it failed to start, usually)."""
        if self.errlog.closed:
            return ""
        self.errlog.flush()
        self.errlog.seek(0)
        text = self.errlog.read().decode(errors="replace")
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        return lines[-1].removeprefix("error: ") if lines else ""

    async def list_tools(self) -> list[Tool]:
        tools: list[Tool] = []
        cursor = None
        while True:
            page = await self.request("tools/list", {"cursor": cursor} if cursor else {})
            tools += [Tool.model_validate(t) for t in page.get("tools") or []]
            cursor = page.get("nextCursor")
            if not cursor:
                return tools

    async def call_tool(
        self, tool: str, args: dict[str, Any], meta: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"name": tool, "arguments": args}
        if meta:
            params["_meta"] = meta
        return await self.request("tools/call", params)

    async def close(self) -> None:
        """Close stdin (the server's cue to exit), then terminate, then kill, as the SDK does."""
        proc = self.proc
        if proc is not None and proc.returncode is None:
            try:
                proc.stdin.close()
                await asyncio.wait_for(proc.wait(), CLOSE_GRACE_S)
            except (TimeoutError, ProcessLookupError, ConnectionError):
                for stop in (proc.terminate, proc.kill):
                    try:
                        stop()
                        await asyncio.wait_for(proc.wait(), CLOSE_GRACE_S)
                        break
                    except (TimeoutError, ProcessLookupError):
                        continue
        if self._reader is not None:
            self._reader.cancel()
            try:
                await self._reader
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - shutting down
                pass
        self.errlog.close()
