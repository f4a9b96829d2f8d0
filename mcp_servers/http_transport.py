"""What sopgraph's MCP server adds to the SDK's streamable HTTP transport: a JSON nesting limit
answered with a JSON-RPC parse error, and ordinary client disconnects logged once, briefly.
"""

from __future__ import annotations

import json
import logging
import re
from itertools import accumulate
from typing import Any

import anyio
from mcp.server.transport_security import RequestBodyLimitMiddleware
from mcp.types import PARSE_ERROR
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Deeper JSON is refused before the SDK parses it: its json.loads raises RecursionError near
# 1,000 levels (an HTTP 500 with a traceback), and its message validation stops near 255.
MAX_JSON_DEPTH = 200
# A string, or an unterminated one to the end: every attempt matches, so the scan is linear.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?', re.S)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = tuple(1 if b in b"[{" else -1 if b in b"]}" else 0 for b in range(256))

# Raised in the SDK's stream tasks when a client goes away mid-stream: not a server fault.
DISCONNECTS: tuple[type[BaseException], ...] = (
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
)
# The SDK's loggers that report those disconnects as errors with a traceback.
_SDK_LOGGERS = (
    "mcp.server.streamable_http",
    "mcp.server.streamable_http_manager",
    "mcp.server.lowlevel.server",
    "mcp.shared.session",
    "uvicorn.error",
)


def nested_deeper_than(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether the JSON text ``body`` nests arrays/objects more than ``limit`` deep.

    Linear and without recursion; brackets inside strings do not count. Unbalanced closing
    brackets count as nothing (the parser reports such text as malformed anyway).
    """
    if body.count(b"[") + body.count(b"{") <= limit:  # the common case: no closer look
        return False
    brackets = _STRING.sub(b"", body).translate(None, _NOT_BRACKETS)
    return any(depth > limit for depth in accumulate(map(_STEP.__getitem__, brackets)))


class JsonDepthLimit:
    """ASGI middleware: a POST whose JSON nests more than ``limit`` deep gets HTTP 400 with a
    JSON-RPC parse error; every other request goes on unchanged.

    It sits behind the SDK's body size limit (so it never holds more than ``max_body`` bytes)
    and behind authentication (so unauthenticated requests are not read at all).
    """

    def __init__(self, app: ASGIApp, limit: int = MAX_JSON_DEPTH) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        messages: list[Message] = []
        body = bytearray()
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            body.extend(message.get("body", b""))
            if not message.get("more_body", False):
                break
        if nested_deeper_than(bytes(body), self.limit):
            await _parse_error(send, f"Parse error: JSON nested more than {self.limit} levels deep")
            return

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)


async def _parse_error(send: Send, reason: str) -> None:
    payload = {"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": reason}}
    data = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": 400, "headers": headers})
    await send({"type": "http.response.body", "body": data})


def guard_session_manager(manager: Any) -> None:
    """Put the JSON depth limit in front of ``manager`` (a ``StreamableHTTPSessionManager``),
    behind a body size limit of its own size."""
    limit = manager.max_request_body_size
    manager.asgi_app = RequestBodyLimitMiddleware(JsonDepthLimit(manager.asgi_app), limit)


class QuietDisconnects(logging.Filter):
    """Turns the SDK's traceback for a client that went away into one warning line, the first
    time; later ones are dropped. Other records pass unchanged."""

    def __init__(self) -> None:
        super().__init__()
        self.warned = False

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is None or not _is_disconnect(exc):
            return True
        if self.warned:
            return False
        self.warned = True
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        record.msg = "an MCP client disconnected with a stream open (%s); later ones are not logged"
        record.args = (type(exc).__name__,)
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        return True


def _is_disconnect(exc: BaseException) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return all(_is_disconnect(e) for e in exc.exceptions)
    return isinstance(exc, DISCONNECTS)


def quiet_disconnects() -> QuietDisconnects:
    """Install one ``QuietDisconnects`` on the SDK's transport loggers (once per process)."""
    for name in _SDK_LOGGERS:
        for existing in logging.getLogger(name).filters:
            if isinstance(existing, QuietDisconnects):
                return existing
    shared = QuietDisconnects()
    for name in _SDK_LOGGERS:
        logging.getLogger(name).addFilter(shared)
    return shared
