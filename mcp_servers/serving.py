"""How a data server runs: its command line (``--db``, ``--transport``, ``--host``, ``--port``),
its transports, the event-loop stdio pipes, and the annotation its read-only tools carry.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import sys
from collections.abc import Iterable
from pathlib import Path

import anyio
import orjson
from mcp.server.fastmcp import FastMCP
from mcp.server.stdio import stdio_server
from mcp.types import ToolAnnotations

from sopgraph.mcp_servers.tool_calls import ToolCalls

READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)


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
