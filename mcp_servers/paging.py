"""What every sopgraph data server shares: result pages, explicit truncation, JSON values,
read-only refusals and the command line (``--db``, ``--transport``, ``--host``, ``--port``).

A result never silently drops rows: when more exist, it says ``truncated: true`` and gives
the ``next_page`` to ask for.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import decimal
import importlib.util
import math
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import anyio
import orjson
from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.types import CallToolRequest, ToolAnnotations
from pydantic import BaseModel

DEFAULT_PAGE_SIZE = 200
MAX_PAGE_SIZE = 1000
READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)


class Page(BaseModel):
    """One page of a tabular result.

    Tools return it as a plain dict: a typed output schema makes the MCP client re-check
    the schema with jsonschema on every call, which costs more than the query.
    """

    columns: list[str]
    column_types: list[str]
    rows: list[list[Any]]
    page: int
    page_size: int
    row_count: int
    truncated: bool
    next_page: int | None
    note: str | None = None


def check_page(page: int, page_size: int, max_size: int = MAX_PAGE_SIZE) -> None:
    """Refuse a page request a caller can fix, in one line."""
    if page < 0:
        raise ToolError(f"page must be >= 0 (got {page}); pages count from 0")
    if not 1 <= page_size <= max_size:
        raise ToolError(f"page_size must be between 1 and {max_size} (got {page_size})")


def json_value(v: Any) -> Any:
    """A database value as plain JSON: timestamps as ISO 8601, decimals as floats."""
    if isinstance(v, dt.datetime):
        return v.isoformat()
    if isinstance(v, dt.date | dt.time):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None
    if isinstance(v, bytes):
        return v.hex()
    return v


def page_from_cursor(
    fetchmany, columns: Sequence[str], types: Sequence[str], page: int, page_size: int
) -> Page:
    """Skip to ``page`` and read one page plus one row (to know whether more exist)."""
    skip = page * page_size
    while skip > 0:
        got = fetchmany(min(skip, 10_000))
        if not got:
            break
        skip -= len(got)
    rows = fetchmany(page_size + 1)
    more = len(rows) > page_size
    rows = rows[:page_size]
    return Page(
        columns=list(columns),
        column_types=list(types),
        rows=[[json_value(v) for v in r] for r in rows],
        page=page,
        page_size=page_size,
        row_count=len(rows),
        truncated=more,
        next_page=page + 1 if more else None,
        note=f"more rows exist: call again with page={page + 1}" if more else None,
    )


def slice_items(
    items: Sequence[Any], page: int, page_size: int
) -> tuple[list[Any], bool, int | None]:
    """One page of an in-memory list: (items, truncated, next_page)."""
    lo = page * page_size
    chunk = list(items[lo : lo + page_size])
    more = len(items) > lo + page_size
    return chunk, more, (page + 1 if more else None)


def strip_sql(sql: str) -> str:
    text = sql.strip()
    while text.endswith(";"):
        text = text[:-1].rstrip()
    if not text:
        raise ToolError("empty query; pass one SELECT statement")
    return text


def parse_args(name: str, env_var: str, argv: Iterable[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog=f"python -m sopgraph.mcp_servers.{name}", description=f"sopgraph {name} MCP server"
    )
    ap.add_argument("--db", default=os.environ.get(env_var), help=f"database file (env {env_var})")
    ap.add_argument("--transport", choices=("stdio", "streamable-http"), default="stdio")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    args = ap.parse_args(list(argv) if argv is not None else None)
    if not args.db:
        ap.exit(2, f"error: no database: pass --db PATH or set {env_var}\n")
    if not Path(args.db).exists():
        ap.exit(
            2,
            f"error: {args.db}: no such database; build the world with `sopgraph demo`, or set"
            " SOPGRAPH_HOME to the absolute path of the folder holding fc_world/, or fix --db\n",
        )
    return args


def serve(mcp: FastMCP, args: argparse.Namespace) -> None:
    """Run on stdio, or on streamable HTTP bound to loopback by default."""
    if args.transport == "streamable-http":
        mcp.settings.host = args.host
        mcp.settings.port = args.port
        mcp.run("streamable-http")
    else:
        anyio.run(serve_stdio, mcp, backend_options={"use_uvloop": _has_uvloop()})


async def serve_stdio(mcp: FastMCP) -> None:
    """FastMCP's stdio loop, with stdin and stdout read and written on the event loop, and
    ``tools/call`` answered on a short path.

    The SDK wraps stdin and stdout with ``anyio.wrap_file``, which hops to a worker thread for
    every line read and every write and flush: about a quarter of a server's CPU under load.
    """
    loop = asyncio.get_running_loop()
    try:
        stdin, stdout = await LoopStdin.open(loop), await LoopStdout.open(loop)
    except (OSError, ValueError):  # stdin or stdout is a regular file: the SDK's threads work
        stdin = stdout = None
    async with stdio_server(stdin, stdout) as (read_stream, write_stream):
        server = mcp._mcp_server
        if stdin is not None:
            stdin.short_path = ToolCalls(mcp, stdout)
        await server.run(read_stream, write_stream, server.create_initialization_options())


class ToolCalls:
    """``tools/call`` requests answered beside the SDK's session, by the same handler.

    The session wraps each request in pydantic message models, a responder, a cancel scope and
    two memory-stream hops; for a tool that runs in well under a millisecond that is most of
    the server's work. The call goes through the very handler the session would use (FastMCP's
    argument validation, result conversion and output schema check) and is encoded once. Tools
    that take a ``Context`` (progress, logging), and requests that ask for progress, still go
    through the session.
    """

    def __init__(self, mcp: FastMCP, stdout: LoopStdout):
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


class LoopStdin:
    """``async for line in stdin`` over the process's stdin pipe, as ``stdio_server`` reads it;
    lines that ``short_path`` takes are answered there and not passed on."""

    def __init__(self, reader: asyncio.StreamReader):
        self.reader = reader
        self.short_path: ToolCalls | None = None

    @classmethod
    async def open(cls, loop: asyncio.AbstractEventLoop) -> LoopStdin:
        reader = asyncio.StreamReader(limit=64 * 1024 * 1024, loop=loop)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        return cls(reader)

    def __aiter__(self) -> LoopStdin:
        return self

    async def __anext__(self) -> str:
        while line := await self.reader.readline():
            if self.short_path is not None:
                try:
                    msg = orjson.loads(line)
                except ValueError:
                    msg = None  # the SDK answers a malformed line with its own parse error
                if self.short_path.take(msg):
                    continue
            return line.decode("utf-8", errors="replace")
        raise StopAsyncIteration


class LoopStdout:
    """``await write(text)`` / ``await flush()`` on the process's stdout pipe, without threads."""

    def __init__(self, writer: asyncio.StreamWriter):
        self.writer = writer

    @classmethod
    async def open(cls, loop: asyncio.AbstractEventLoop) -> LoopStdout:
        transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.streams.FlowControlMixin(loop=loop), sys.stdout
        )
        return cls(asyncio.StreamWriter(transport, protocol, None, loop))

    async def write(self, text: str) -> None:
        self.writer.write(text.encode())

    def write_line(self, data: bytes) -> None:
        """One JSON-RPC message, already encoded."""
        self.writer.write(data + b"\n")

    async def flush(self) -> None:
        await self.writer.drain()


def _has_uvloop() -> bool:
    return importlib.util.find_spec("uvloop") is not None
