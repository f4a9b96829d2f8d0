"""An MCP server over EnterpriseBench's company (employees, IT tickets, CRM customers) that
checks every call against the operator's access policy (``enterprise_policy.py``).

Every call acts as one employee: over stdio the one given at start (``--as EMP_ID``), over
streamable HTTP the identity of the request's bearer token (``server_auth.py``; the tokens
file's identities are employee ids). A tool argument never names the caller. Rows the caller
may not see are never read into an answer, fields it may not read are left out, and a filter,
sort or explicit field on something it may not read is refused, not answered around. A
refusal is a tool error of one line starting ``access denied:``; every call, allowed or not,
is one line of the audit log (JSONL, ``--audit``). docs/access-control.md has it all.

Run::

    python -m sopgraph.mcp_servers.enterprise --as emp_0431
    python -m sopgraph.mcp_servers.enterprise --transport http --port 8931 --tokens FILE
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError

from sopgraph.graphs.home import home_dir
from sopgraph.mcp_servers.enterprise_policy import (
    AccessDenied,
    Caller,
    Policy,
    PolicyError,
    load_policy,
)
from sopgraph.mcp_servers.enterprise_store import DEFAULT_DATA, Company, load_company
from sopgraph.mcp_servers.enterprise_tools import CALLER, RETURNED, add_tools
from sopgraph.mcp_servers.http_transport import guard_session_manager, quiet_disconnects
from sopgraph.mcp_servers.login_throttle import LoginThrottle, TokenThrottle
from sopgraph.mcp_servers.server_auth import (
    TOKENS_HELP,
    TokenError,
    TokenTable,
    auth_settings,
    load_tokens,
    request_identity,
)

SERVER_NAME = "enterprise"
DEFAULT_POLICY = DEFAULT_DATA.parent / "policy.yaml"


# The most of a call's arguments one audit entry stores, in bytes of their canonical JSON
# (``json.dumps(arguments, sort_keys=True, separators=(",", ":"))``, ASCII). Larger arguments
# are stored as the first AUDIT_ARGUMENTS_BYTES of that text, with ``arguments_truncated``,
# their full size (``arguments_bytes``) and the SHA-256 of the full text
# (``arguments_sha256``), so an auditor can match the entry to a request kept elsewhere. The
# cap holds for refused and allowed calls alike: before it, 5 refused calls carrying 3 MB each
# grew the log by 15 MB.
AUDIT_ARGUMENTS_BYTES = 4096
# The most of any other text an entry stores (tool name, identity, reason), in characters.
AUDIT_TEXT_CHARS = 1024


def audit_arguments(arguments: Any) -> dict[str, Any]:
    """The audit entry's fields for ``arguments``: whole when their canonical JSON fits in
    AUDIT_ARGUMENTS_BYTES, else its head, its size and its SHA-256."""
    full = json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)
    if len(full) <= AUDIT_ARGUMENTS_BYTES:  # ASCII: characters are bytes
        return {"arguments": arguments}
    return {
        "arguments": full[:AUDIT_ARGUMENTS_BYTES],
        "arguments_truncated": True,
        "arguments_bytes": len(full),
        "arguments_sha256": hashlib.sha256(full.encode("ascii")).hexdigest(),
    }


def _clip(value: Any) -> Any:
    if isinstance(value, str) and len(value) > AUDIT_TEXT_CHARS:
        return f"{value[:AUDIT_TEXT_CHARS]}... ({len(value):,} characters in all)"
    return value


class AuditLog:
    """Every call: who, which tool, its arguments, ok or refused (and why), records returned.

    Each entry is bounded: arguments to AUDIT_ARGUMENTS_BYTES (with size and SHA-256 when
    cut), any other text to AUDIT_TEXT_CHARS; ``returned`` is bounded by the tools' limits."""

    def __init__(self, path: Path | None):
        self.path = path
        self.lock = threading.Lock()
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, record: dict[str, Any]) -> None:
        if self.path is None:
            return
        entry: dict[str, Any] = {"ts": dt.datetime.now(dt.UTC).isoformat()}
        for key, value in record.items():
            entry.update(audit_arguments(value) if key == "arguments" else {key: _clip(value)})
        line = json.dumps(entry, default=str)
        with self.lock, self.path.open("a", encoding="utf-8") as f:
            f.write(line + "\n")


class EnterpriseMCP(FastMCP):
    """FastMCP that fixes each call's caller, refuses arguments a tool does not take, makes an
    access refusal one line, and writes each call to the audit log."""

    def __init__(
        self, company: Company, policy: Policy, audit: AuditLog, operator: str | None,
        tokens: TokenTable | None, **settings: Any,
    ) -> None:  # fmt: skip
        super().__init__(SERVER_NAME, **settings)
        self.company, self.policy, self.audit = company, policy, audit
        self.operator, self.tokens = operator, tokens
        self.throttle = LoginThrottle()  # wrong bearer tokens, per client address and for all

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        identity = request_identity(self.get_context(), self.tokens, self.operator or "")
        record: dict[str, Any] = {"identity": identity, "tool": name, "arguments": arguments}
        returned: list[str] = []
        token = RETURNED.set(returned)
        try:
            caller = Caller.of(self.company, identity)
            CALLER.set(caller)
            tool = self._tool_manager.get_tool(name)
            if tool is not None:
                extra = sorted(set(arguments) - set(tool.parameters.get("properties", {})))
                if extra:
                    raise AccessDenied(
                        f"{name} argument {extra[0][:40]!r}",
                        f"not a parameter of {name}; every call acts as {identity} (the "
                        "server's identity: --as or the bearer token), never as an argument",
                    )
            result = await super().call_tool(name, arguments)
        except AccessDenied as exc:
            self.audit.write({**record, "outcome": "refused", "reason": str(exc)})
            raise ToolError(str(exc)) from None
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, AccessDenied):
                self.audit.write({**record, "outcome": "refused", "reason": str(cause)})
                raise ToolError(str(cause)) from None
            self.audit.write({**record, "outcome": "error", "reason": str(cause or exc)})
            raise ToolError(str(cause or exc).splitlines()[0]) from None
        finally:
            RETURNED.reset(token)
        self.audit.write({**record, "outcome": "ok", "returned": returned})
        return result

    def streamable_http_app(self) -> Any:
        """The SDK's app, refused without tokens (deny by default), with the JSON depth limit,
        inside ``TokenThrottle`` (wrong tokens throttled per client address and for all, as on
        sopgraph's own MCP server)."""
        if self._token_verifier is None:
            raise TokenError("the enterprise server is not served over HTTP without --tokens FILE")
        app = super().streamable_http_app()
        guard_session_manager(self.session_manager)
        return TokenThrottle(app, self.throttle)


def create_server(
    company: Company,
    policy: Policy,
    *,
    operator: str | None = None,
    tokens: TokenTable | None = None,
    audit: Path | None = None,
    **settings: Any,
) -> EnterpriseMCP:
    """The server; ``operator`` is the stdio caller (``--as``), ``tokens`` the HTTP callers."""
    settings.setdefault("log_level", "WARNING")
    if tokens is not None:
        url = f"http://{settings.get('host', '127.0.0.1')}:{settings.get('port', 8000)}"
        settings.update(auth=auth_settings(url), token_verifier=tokens)
    mcp = EnterpriseMCP(
        company, policy, AuditLog(audit), operator, tokens,
        instructions="Inazuma.co's employees, IT tickets and CRM customers. Every call acts as "
        "the server's authenticated employee; what it may read is the operator's policy.",
        **settings,
    )  # fmt: skip
    add_tools(mcp)
    return mcp


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m sopgraph.mcp_servers.enterprise", description=__doc__.splitlines()[0]
    )
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    p.add_argument("--as", dest="as_emp", metavar="EMP_ID", help="stdio: the employee it acts as")
    p.add_argument("--tokens", metavar="FILE", help=TOKENS_HELP + " (identities: employee ids)")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="EnterpriseBench JSON folder")
    p.add_argument("--policy", type=Path, default=DEFAULT_POLICY, help="access policy (YAML)")
    p.add_argument(
        "--audit", type=Path, help="JSONL audit log (default $SOPGRAPH_HOME/enterprise-audit.jsonl)"
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8931)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        policy = load_policy(args.policy)
        tokens = None
        if args.transport == "http":
            if args.as_emp:
                raise TokenError("--as is for stdio; over HTTP each bearer token names the caller")
            tokens = load_tokens(args.tokens)
            for warning in tokens.warnings:
                print(f"warning: {warning}", file=sys.stderr)
        elif not args.as_emp:
            raise TokenError("over stdio the server acts as one employee: pass --as EMP_ID")
        company = load_company(args.data)
        if args.as_emp and company.employee(args.as_emp) is None:
            raise TokenError(f"--as {args.as_emp!r}: no such employee in {args.data}")
    except (PolicyError, TokenError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:
        print(f"error: --data {args.data}: cannot load the company ({exc})", file=sys.stderr)
        return 2
    audit = args.audit or home_dir() / "enterprise-audit.jsonl"
    server = create_server(
        company, policy, operator=args.as_emp, tokens=tokens, audit=audit,
        host=args.host, port=args.port,
    )  # fmt: skip
    if args.transport == "stdio":
        server.run("stdio")
        return 0
    quiet_disconnects()
    print(f"enterprise MCP server: http://{args.host}:{args.port}/mcp", file=sys.stderr, flush=True)
    server.run("streamable-http")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
