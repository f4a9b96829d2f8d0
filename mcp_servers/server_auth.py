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

Wrong tokens are throttled (``login_throttle.py``): behind its ``TokenThrottle``,
``verify_token`` counts each token the SDK's auth finds wrong against the request's address.
"""

from __future__ import annotations

import getpass
import hashlib
import hmac
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.fastmcp.exceptions import ToolError
from mcp.shared._httpx_utils import create_mcp_http_client

from sopgraph.mcp_servers.login_throttle import _ATTEMPT, Throttled

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
