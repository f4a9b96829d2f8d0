"""Who is calling sopgraph's MCP server: bearer tokens over HTTP, the operator over stdio.

Over streamable HTTP every request must carry ``Authorization: Bearer <token>`` with a token
from the operator's tokens file (``sopgraph mcp serve --tokens FILE``, or the file named by
``SOPGRAPH_MCP_TOKENS``); the server refuses to start over HTTP without one. The file holds one
token per line, ``<identity> <token>``, where the token is either the token itself (at least 32
characters, e.g. from ``python -c "import secrets; print(secrets.token_urlsafe(32))"``) or
``sha256:<hex>``, the SHA-256 of the token, so the file need not hold the secret::

    # identity         token
    alice@example.com  sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
    night-shift-bot    Yb2cE4m0Qz1v7kJq8r5sT3uW6xZ9aB2cD4eF6gH8iJ0

Blank lines and lines starting with ``#`` are skipped. The identity (letters, digits and
``._@+:/-``) is what the run trail records as the approver of a gated action answered with that
token. Only the tokens' SHA-256 digests are kept in memory, compared in constant time. Over stdio
the one client is the operator's own process: the approver is the OS user running the server,
or the name given with ``--approver``, never the name a client gives itself.

Wrong tokens are throttled (``LoginThrottle``, shared by the HTTP MCP server and the console):
after ``MAX_FAILURES`` within ``WINDOW_SECONDS`` from one client address, or ``GLOBAL_FAILURES``
from all of them, that address (or everyone) is refused, a right token too, until
``LOCKOUT_SECONDS`` pass. On the MCP server ``TokenThrottle`` wraps the whole ASGI app: it answers
429 with ``Retry-After`` during a lockout, and ``verify_token`` counts each token the SDK's
auth finds wrong against the request's address.
"""

from __future__ import annotations

import getpass
import hashlib
import hmac
import json
import math
import os
import re
import stat
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.fastmcp.exceptions import ToolError
from mcp.shared._httpx_utils import create_mcp_http_client
from starlette.types import ASGIApp, Message, Receive, Scope, Send

TOKENS_ENV = "SOPGRAPH_MCP_TOKENS"
MIN_TOKEN_CHARS = 32
MAX_TOKEN_CHARS = 4096  # a longer bearer value is refused before it is hashed
_IDENTITY = re.compile(r"[\w.@+:/-]{1,128}")
_DIGEST = re.compile(r"sha256:([0-9a-fA-F]{64})")
TOKENS_HELP = (
    "bearer tokens for --transport http (required there; default $SOPGRAPH_MCP_TOKENS): a file "
    "of lines '<identity> <token>', the token itself (32+ characters) or 'sha256:<hex>' of it; "
    "the identity is recorded as the approver of the gated actions its client answers"
)
APPROVER_HELP = (
    "stdio only: the approver recorded for gated actions answered by the client (default: the "
    "OS user running the server); over HTTP each token's identity is recorded"
)


class TokenError(ValueError):
    """The tokens configuration is missing or wrong; the message is one line saying how to fix it."""


@dataclass
class TokenTable:
    """The operator's tokens as SHA-256 digests, each with its identity: an MCP ``TokenVerifier``.

    Example:
        >>> table = TokenTable.parse("ann " + "t" * 32, "tokens")
        >>> (await table.verify_token("t" * 32)).client_id
        'ann'
    """

    entries: list[tuple[bytes, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str, where: str) -> TokenTable:
        table = cls()
        seen: set[bytes] = set()
        for n, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split()
            if len(parts) != 2:
                raise TokenError(
                    f"{where}:{n}: expected '<identity> <token>' (two fields); see "
                    "`sopgraph mcp serve --help`"
                )
            identity, secret = parts
            if not _IDENTITY.fullmatch(identity):
                raise TokenError(
                    f"{where}:{n}: identity {identity[:40]!r} may hold only letters, digits and "
                    "._@+:/- (at most 128)"
                )
            digest = _digest_of(secret, identity, f"{where}:{n}")
            if digest in seen:
                raise TokenError(f"{where}:{n}: the token of {identity} is already listed")
            seen.add(digest)
            table.entries.append((digest, identity))
        if not table.entries:
            raise TokenError(f"{where}: no tokens in it; add a line '<identity> <token>'")
        return table

    def identity(self, token: str) -> str | None:
        """The identity of ``token``, or None; every entry is compared, in constant time."""
        if not token or len(token) > MAX_TOKEN_CHARS:
            return None
        digest = _sha256(token)
        found = None
        for known, identity in self.entries:
            if hmac.compare_digest(known, digest):
                found = identity
        return found

    async def verify_token(self, token: str) -> AccessToken | None:
        """The SDK's check of a bearer token. Behind ``TokenThrottle`` it is throttled: a wrong
        token counts as a failure of the request's client address, and while that address (or
        everyone) is locked out no token is checked (the middleware answers 429)."""
        attempt = _ATTEMPT.get()
        if attempt is None:
            identity = self.identity(token)
        else:
            try:  # the lockout check, the token check and the count under one lock
                identity = attempt.throttle.check(attempt.address, lambda: self.identity(token))
            except Throttled as exc:
                attempt.refused = exc
                return None
        if identity is None:
            return None
        # The secret itself is not kept with the request: a digest prefix tells tokens apart.
        tag = _sha256(token).hex()[:12]
        return AccessToken(token=f"sha256:{tag}", client_id=identity, scopes=[], subject=identity)


def _digest_of(secret: str, identity: str, where: str) -> bytes:
    hashed = _DIGEST.fullmatch(secret)
    if hashed:
        return bytes.fromhex(hashed.group(1))
    if len(secret) < MIN_TOKEN_CHARS:
        raise TokenError(
            f"{where}: the token of {identity} has {len(secret)} characters; use at least "
            f'{MIN_TOKEN_CHARS} (python -c "import secrets; print(secrets.token_urlsafe(32))")'
        )
    return _sha256(secret)


def _sha256(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


def load_tokens(path: str | Path | None) -> TokenTable:
    """The tokens file at ``path`` (else ``$SOPGRAPH_MCP_TOKENS``); raises ``TokenError``."""
    path = path or os.environ.get(TOKENS_ENV) or None
    if path is None:
        raise TokenError(
            "the HTTP MCP server needs bearer tokens: pass --tokens FILE (or set "
            f"{TOKENS_ENV}=FILE), a file of '<identity> <token>' lines; see "
            "`sopgraph mcp serve --help`"
        )
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
        mode = file.stat().st_mode
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or type(exc).__name__
        raise TokenError(f"--tokens {file}: cannot read it ({why}); give the tokens file") from None
    table = TokenTable.parse(text, str(file))
    if mode & (stat.S_IRGRP | stat.S_IROTH) and any(
        not _DIGEST.match(line.split()[-1])
        for line in text.splitlines()
        if line.strip() and not line.strip().startswith("#")
    ):
        table.warnings.append(
            f"{file} holds tokens in clear and other users can read it: chmod 600 it, or "
            "write 'sha256:<hex>' digests instead"
        )
    return table


def auth_settings(url: str) -> AuthSettings:
    """The SDK's auth settings for a server that checks its own tokens (no OAuth server)."""
    # The issuer is required by the SDK; with no resource_server_url nothing advertises it.
    return AuthSettings(issuer_url=url, resource_server_url=None)


def local_operator(name: str | None = None) -> str:
    """Who answers over stdio: ``name``, else the OS user running the server."""
    if name:
        if not _IDENTITY.fullmatch(name):
            raise TokenError(
                f"--approver {name[:40]!r}: use only letters, digits and ._@+:/- (at most 128)"
            )
        return name
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name and no passwd entry (some containers)
        return f"uid {os.getuid()}"


def authenticated_identity(request: Any) -> str | None:
    """The identity of the bearer token that authenticated ``request`` (the Starlette request
    that carried the MCP message), else None."""
    user = getattr(request, "scope", {}).get("user") if request is not None else None
    if isinstance(user, AuthenticatedUser):
        return user.access_token.client_id
    return None


def bearer_client(token: str) -> httpx.AsyncClient:
    """An HTTP client for ``mcp.client.streamable_http.streamable_http_client`` that sends
    ``token``, with the SDK's timeouts."""
    return create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})


def request_identity(ctx: Any, tokens: TokenTable | None, operator: str) -> str:
    """Who answers through this request: the identity of its bearer token when the server has
    tokens (HTTP), else the operator (stdio). Never the name a client gives itself."""
    if tokens is None:
        return operator
    try:
        request = ctx.request_context.request
    except ValueError:  # outside a request
        request = None
    identity = authenticated_identity(request)
    if identity is None:  # the SDK's auth lets no such request through; refuse if one came
        raise ToolError("this request carries no valid bearer token; the server refuses it")
    return identity


class Throttled(Exception):
    """Too many wrong tokens: from this client address, or (``everyone``) from all of them."""

    def __init__(self, retry_after: int, everyone: bool) -> None:
        super().__init__(f"throttled for {retry_after} s")
        self.retry_after = retry_after
        self.everyone = everyone

    def text(self, place: str = "on this console", refused: str = "logins") -> str:
        """One line saying why and for how long; ``place`` names where (``everyone``)."""
        who = place if self.everyone else "from your address"
        return (
            f"Too many wrong tokens were tried {who}; {refused} are refused for now, a right "
            f"token too: try again in {self.retry_after} seconds."
        )


@dataclass
class _Window:
    """The recent failures of one client address (or of all): their times, and the lockout."""

    failures: deque[float]
    last: float = 0.0
    locked_until: float = 0.0

    def fail(self, now: float, window: float, lockout: float) -> None:
        while self.failures and self.failures[0] <= now - window:
            self.failures.popleft()
        self.failures.append(now)
        self.last = now
        if len(self.failures) == self.failures.maxlen:
            self.locked_until = now + lockout
            self.failures.clear()


class LoginThrottle:
    """Failed token checks, counted per client address and for all of them, in memory.

    After ``max_failures`` wrong tokens within ``window`` seconds from one address, that address
    is locked out for ``lockout`` seconds (counted from the failure that locked it); after
    ``global_failures`` within ``window`` from all addresses together, everyone is. While locked
    out, a token is refused without being checked, a right one too, and the refusal counts as
    nothing. A right token does not clear the failures (one valid token would otherwise let its
    holder guess others at full speed). At most ``max_addresses`` addresses are tracked: stale
    ones go first, then the longest idle unlocked ones. Safe across threads and tasks: one lock
    around each check. ``clock`` is injectable for tests (a monotonic clock by default).
    """

    MAX_FAILURES = 5
    WINDOW_SECONDS = 60
    LOCKOUT_SECONDS = 60
    GLOBAL_FAILURES = 50
    MAX_ADDRESSES = 4096

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        *,
        max_failures: int = MAX_FAILURES,
        window: float = WINDOW_SECONDS,
        lockout: float = LOCKOUT_SECONDS,
        global_failures: int = GLOBAL_FAILURES,
        max_addresses: int = MAX_ADDRESSES,
    ) -> None:
        self.clock = clock
        self.max_failures, self.max_addresses = max_failures, max_addresses
        self.window, self.lockout = window, lockout
        self._lock = threading.Lock()
        self._addresses: OrderedDict[str, _Window] = OrderedDict()  # longest idle first
        self._everyone = _Window(deque(maxlen=global_failures))

    def check(self, address: str, verify: Callable[[], str | None]) -> str | None:
        """What ``verify()`` finds (an identity), None counted as a failure of ``address``;
        raises ``Throttled`` instead while ``address``, or everyone, is locked out."""
        with self._lock:
            now = self.clock()
            refused = self._refusal(address, now)
            if refused is not None:
                raise refused
            identity = verify()
            if identity is None:
                self._fail(address, now)
            return identity

    def refusal(self, address: str) -> Throttled | None:
        """The ``Throttled`` refusing ``address`` now (it, or everyone, is locked out), else
        None; counts nothing."""
        with self._lock:
            return self._refusal(address, self.clock())

    def _refusal(self, address: str, now: float) -> Throttled | None:
        for window, everyone in ((self._everyone, True), (self._addresses.get(address), False)):
            if window is not None and now < window.locked_until:
                return Throttled(max(1, math.ceil(window.locked_until - now)), everyone)
        return None

    def tracked(self) -> int:
        """How many client addresses are tracked now."""
        with self._lock:
            return len(self._addresses)

    def _fail(self, address: str, now: float) -> None:
        window = self._addresses.pop(address, None) or _Window(deque(maxlen=self.max_failures))
        self._addresses[address] = window
        window.fail(now, self.window, self.lockout)
        self._everyone.fail(now, self.window, self.lockout)
        stale = now - max(self.window, self.lockout)
        while self._addresses:
            oldest = next(iter(self._addresses.values()))
            if oldest.last > stale:
                break
            self._addresses.popitem(last=False)
        while len(self._addresses) > self.max_addresses:
            unlocked = (a for a, w in self._addresses.items() if w.locked_until <= now)
            self._addresses.pop(next(unlocked, next(iter(self._addresses))))


def client_address(scope: Scope) -> str:
    """The client's address as the socket gives it (behind a proxy: the proxy's)."""
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


@dataclass
class _Attempt:
    """One HTTP request's token check, seen by ``TokenTable.verify_token``."""

    throttle: LoginThrottle
    address: str
    refused: Throttled | None = None


_ATTEMPT: ContextVar[_Attempt | None] = ContextVar("sopgraph_token_attempt", default=None)


class TokenThrottle:
    """ASGI middleware around a whole MCP server app: wrong bearer tokens throttled by
    ``throttle`` per client address (``scope["client"]``) and for everyone.

    While the request's address, or everyone, is locked out it answers 429 with ``Retry-After``
    and a JSON body naming why, before anything behind it runs. Otherwise it lets the request
    through with the address in a context variable, so that the SDK's auth (``TokenTable
    .verify_token``) counts a wrong token against it in the same locked step that checks the
    lockout: parallel requests get no more guesses than sequential ones. A lockout reached by
    another request meanwhile turns that request's 401 into the same 429.
    """

    def __init__(self, app: ASGIApp, throttle: LoginThrottle | None = None) -> None:
        self.app = app
        self.throttle = throttle if throttle is not None else LoginThrottle()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        address = client_address(scope)
        refused = self.throttle.refusal(address)
        if refused is not None:
            await _too_many(send, refused)
            return
        attempt = _Attempt(self.throttle, address)

        async def answer(message: Message) -> None:
            if attempt.refused is None:
                await send(message)
            elif message["type"] == "http.response.start":
                await _too_many(send, attempt.refused)
            # the refused request's own 401 body is dropped

        reset = _ATTEMPT.set(attempt)
        try:
            await self.app(scope, receive, answer)
        finally:
            _ATTEMPT.reset(reset)


async def _too_many(send: Send, refused: Throttled) -> None:
    payload = {
        "error": "too_many_failed_tokens",
        "error_description": refused.text("on this server", "requests"),
        "locked_out": "everyone" if refused.everyone else "address",
        "retry_after": refused.retry_after,
    }
    data = json.dumps(payload).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        (b"retry-after", str(refused.retry_after).encode()),
    ]
    await send({"type": "http.response.start", "status": 429, "headers": headers})
    await send({"type": "http.response.body", "body": data})
