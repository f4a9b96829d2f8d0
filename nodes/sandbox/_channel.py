"""The host end of a sandbox's tool channel: bounded requests, bounded replies, bounded records.

The guest writes JSON lines on a request pipe and reads replies on a reply pipe. Everything it
sends is untrusted, so the host accepts a request line up to `max_request_bytes`, answers at
most `max_tool_calls` calls, waits for a reply to be read before reading the next request
(a guest that never reads its replies stalls itself, not the host), sends no reply above
`max_reply_bytes` and keeps at most `max_recorded_bytes` of arguments and results. Any
message other than a tool call or the runner's single `detail` line is a protocol violation,
which the host records and answers by killing the run. Lone surrogates (JSON's "\ud800") in
what the guest sends or a tool returns become U+FFFD, so every record serialises.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel

from sopgraph.graphs.untrusted_text import serialisable

ToolFn = Callable[[dict], Awaitable[Any]]  # a plain function returning the result works too

MAX_TOOL_NAME = 128  # longer names are refused without being echoed or kept
_DETAIL_ERROR_CHARS, _DETAIL_REASON_CHARS = 8000, 200
_PREVIEW_CHARS = 2000


class ToolCall(BaseModel):
    """One tool call the code made through the proxy."""

    tool: str
    args: dict[str, Any] = {}
    result: Any = None
    error: str | None = None
    ms: float = 0.0


class _ReplyPipe(asyncio.Protocol):
    """Write side with flow control: `drain` waits while the guest leaves replies unread."""

    def __init__(self) -> None:
        self.paused = self.closed = False
        self._waiter: asyncio.Future[None] | None = None

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        if self._waiter and not self._waiter.done():
            self._waiter.set_result(None)

    async def drain(self) -> None:
        while self.paused and not self.closed:
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter


class ToolChannel:
    """Serves one run's tool calls; `violation` says why the host stopped the run, if it did."""

    def __init__(self, tools: dict[str, ToolFn], limits: Any, kill: Callable[[], None]) -> None:
        self.tools, self.limits, self._kill = tools, limits, kill
        self.calls: list[ToolCall] = []
        self.n_calls = 0
        self.refused: str | None = None
        self.violation: str | None = None
        self.detail: dict[str, str | None] | None = None
        self.recorded_bytes = 0
        self.owns_fds = False

    def _stop(self, violation: str) -> None:
        self.violation = self.violation or violation
        self._kill()

    async def serve(self, req_r: int, rep_w: int) -> None:
        """Read requests until the guest closes its end (or the host stops the run)."""
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=self.limits.max_request_bytes, loop=loop)
        self.owns_fds = True  # from here the file objects close them, whatever happens
        req_file, rep_file = os.fdopen(req_r, "rb", 0), os.fdopen(rep_w, "wb", 0)
        try:
            transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), req_file
            )
        except BaseException:
            rep_file.close()
            raise
        w_transport, pipe = await loop.connect_write_pipe(_ReplyPipe, rep_file)
        w_transport.set_write_buffer_limits(high=64 * 1024)
        try:
            while True:
                try:
                    line = await reader.readline()
                except (ValueError, asyncio.LimitOverrunError):
                    limit = self.limits.max_request_bytes
                    return self._stop(f"protocol: tool request over {limit} bytes")
                if not line:
                    return
                reply = await self._handle(line)
                if reply is None:
                    if self.violation:
                        return
                    continue
                if not w_transport.is_closing():
                    w_transport.write(reply)
                    await pipe.drain()  # the next request waits until this reply is read
        finally:
            transport.close()
            w_transport.close()

    async def _handle(self, line: bytes) -> bytes | None:
        try:
            msg = serialisable(json.loads(line))
        except (ValueError, RecursionError):  # ValueError covers JSON and over-long integers
            self._stop("protocol: a request that is not JSON")
            return None
        kind = msg.get("type") if isinstance(msg, dict) else None
        if kind == "detail":  # the last one counts: the runner sends its own just before exit
            err, reason = msg.get("error"), msg.get("reason")
            self.detail = {
                "error": str(err)[:_DETAIL_ERROR_CHARS] if err is not None else None,
                "reason": str(reason)[:_DETAIL_REASON_CHARS] if reason is not None else None,
            }
            return None
        if kind != "tool":
            shown = str(kind)[:40] if kind is not None else "no type"
            self._stop(f"protocol: unexpected message on the tool channel ({shown})")
            return None
        return await self._call(msg, len(line))

    async def _call(self, msg: dict[str, Any], size: int) -> bytes:
        self.n_calls += 1
        limit = self.limits.max_tool_calls
        if self.n_calls > limit:
            # Answered (the code may handle it) but not kept; a program that keeps calling
            # regardless is flooding the host and is stopped.
            if self.n_calls > limit + 20:
                self._stop(f"tool call flood: more than {limit} calls")
            return _line({"error": f"tool call limit reached ({limit})"})
        name, args = msg.get("tool"), msg.get("args")
        name = name if isinstance(name, str) else str(type(name).__name__)
        args = args if isinstance(args, dict) else {}
        if len(name) > MAX_TOOL_NAME or name not in self.tools:
            shown = name if len(name) <= MAX_TOOL_NAME else f"{name[:60]}... ({len(name)} chars)"
            error = f"tool not allowed: {shown} (allowed: {', '.join(sorted(self.tools))})"
            self.refused = self.refused or shown
            self._record(ToolCall(tool=shown, error=error))
            return _line({"refused": True, "error": error})
        call = ToolCall(tool=name, args=self._keep(args, size))
        t0 = time.monotonic()
        try:
            result = self.tools[name](args)
            result = serialisable(await result if inspect.isawaitable(result) else result)
            reply = _line({"result": result})
            if len(reply) > self.limits.max_reply_bytes:
                call.error = (
                    f"tool result too large: {len(reply)} bytes "
                    f"(limit {self.limits.max_reply_bytes})"
                )
                reply = _line({"error": call.error})
            else:
                call.result = self._keep(result, len(reply))
        except Exception as e:  # noqa: BLE001 - a failing tool is reported to the code
            call.error = serialisable(f"{type(e).__name__}: {e}"[:_DETAIL_ERROR_CHARS])
            reply = _line({"error": call.error})
        call.ms = round((time.monotonic() - t0) * 1000, 2)
        self._record(call)
        return reply

    def _keep(self, value: Any, size: int) -> Any:
        """`value` itself while the run's record budget lasts, else a short preview."""
        if self.recorded_bytes + size <= self.limits.max_recorded_bytes:
            self.recorded_bytes += size
            return value
        preview = json.dumps(value, default=str)[:_PREVIEW_CHARS]
        self.recorded_bytes += len(preview)
        return {"truncated": True, "bytes": size, "preview": preview}

    def _record(self, call: ToolCall) -> None:
        self.recorded_bytes += 200  # the call's own fields
        self.calls.append(call)


def _line(reply: dict[str, Any]) -> bytes:
    return (json.dumps(reply, default=str) + "\n").encode()
