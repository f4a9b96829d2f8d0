"""A tiny HTTP MCP server for tests that refuses every request without the bearer token, and
answers ``whoami`` with what the client sent: the token's identity and its X-Tenant header.

Run: ``BEARER_ECHO_TOKEN=<32+ chars> python tests/servers/bearer_echo.py PORT [sse]``.
"""

from __future__ import annotations

import hmac
import os
import sys

from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.fastmcp import Context, FastMCP
from mcp.types import ToolAnnotations

# Every tool reads and changes nothing: a decision node may call it (docs/mcp-servers.md).
READ_ONLY = ToolAnnotations(readOnlyHint=True, idempotentHint=True)

TOKEN = os.environ["BEARER_ECHO_TOKEN"]


class OneToken:
    """A ``TokenVerifier`` that knows one token, given to the client ``tester``."""

    async def verify_token(self, token: str) -> AccessToken | None:
        if hmac.compare_digest(token.encode(), TOKEN.encode()):
            return AccessToken(token="t", client_id="tester", scopes=[])
        return None


port = int(sys.argv[1])
url = f"http://127.0.0.1:{port}"
mcp = FastMCP(
    "bearer_echo",
    host="127.0.0.1",
    port=port,
    log_level="WARNING",
    auth=AuthSettings(issuer_url=url, resource_server_url=None),
    token_verifier=OneToken(),
)


@mcp.tool(annotations=READ_ONLY)
def whoami(ctx: Context) -> dict:
    """Who the bearer token says the caller is, and the tenant header it sent."""
    request = ctx.request_context.request
    user = request.scope.get("user") if request else None
    client = getattr(getattr(user, "access_token", None), "client_id", None)
    return {"client": client, "tenant": request.headers.get("x-tenant") if request else None}


if __name__ == "__main__":
    mcp.run(transport="sse" if sys.argv[2:] == ["sse"] else "streamable-http")
