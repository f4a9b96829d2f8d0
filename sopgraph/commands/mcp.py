"""``sopgraph mcp serve``: offer the SOPs to MCP clients (mcp_servers/sopgraph_server.py);
``sopgraph mcp convert``: write an SOP's mcp.json from its deprecated mcp.yaml."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from sopgraph.arguments import port_number
from sopgraph.errors import UserError


def _check_port_free(host: str, port: int) -> None:
    import socket

    # uvicorn reports a taken port as a log line and exit 3; say it here in the CLI's form.
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise UserError(
                f"--port {port}: cannot listen on {host}:{port} ({exc.strerror});"
                " pick another --port or --host"
            ) from None


def cmd_mcp_serve(args: argparse.Namespace) -> int:
    from sopgraph.mcp_servers.sopgraph_serve import serve

    if args.transport == "http":
        _check_port_free(args.host, args.port)

    return serve(args)


def cmd_mcp_convert(args: argparse.Namespace) -> int:
    from sopgraph.nodes.mcp import legacy_to_mcp_json

    sop_dir = Path(args.sop)
    if sop_dir.is_file():
        sop_dir = sop_dir.parent
    legacy, target = sop_dir / "mcp.yaml", sop_dir / "mcp.json"
    if not legacy.is_file():
        raise UserError(f"{legacy}: no such file; give the SOP folder that holds mcp.yaml")
    if target.exists():
        raise UserError(f"{target} already exists; compare it with {legacy}, then delete one")
    text = legacy_to_mcp_json(legacy)
    backup = legacy.with_name("mcp.yaml.bak")
    target.write_text(text, encoding="utf-8")
    legacy.replace(backup)
    print(f"wrote {target}; moved {legacy} to {backup} (delete it once the SOP runs)")
    return 0


def register(sub: Any) -> None:
    """Register ``mcp``, ``mcp serve`` and ``mcp convert`` on the top-level subparsers."""
    # Options mirror mcp_servers.sopgraph_serve.add_serve_args; importing it here would load
    # the MCP SDK (about a second) for every sopgraph command.
    m = sub.add_parser("mcp", help="offer the SOPs to MCP clients; convert mcp.yaml")
    msub = m.add_subparsers(dest="mcp_command", required=True)
    ms = msub.add_parser("serve", help="serve list_sops/describe_sop/run_sop/get_run/resume_run")
    ms.add_argument(
        "--transport",
        choices=["stdio", "http"],
        default="stdio",
        help="stdio (default) or streamable HTTP",
    )
    ms.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    ms.add_argument("--port", type=port_number, default=8000, help="HTTP port (default 8000)")
    ms.add_argument(
        "--checkpoint",
        help="SQLite file (default $SOPGRAPH_HOME/checkpoints.sqlite, home .sopgraph/) "
        "or postgres://…, shared by all SOPs",
    )
    ms.add_argument(
        "--approval",
        choices=["ask", "approve", "reject", "client"],
        default="ask",
        help="gated actions: ask (default) pauses each for resume_run; approve or reject "
        "decides all; client lets run_sop's 'approval' argument decide",
    )
    ms.add_argument(
        "--tokens",
        metavar="FILE",
        help="bearer tokens for --transport http (required there; default "
        "$SOPGRAPH_MCP_TOKENS): a file of lines '<identity> <token>', the token itself (32+ "
        "characters) or 'sha256:<hex>' of it; the identity is recorded as the approver",
    )
    ms.add_argument(
        "--approver",
        metavar="NAME",
        help="stdio only: the approver recorded for gated actions the client answers "
        "(default: the OS user running the server)",
    )
    ms.add_argument(
        "--queue",
        metavar="URL",
        help="a Postgres job queue (postgresql://…, also the checkpoint store): adds "
        "submit_run, which queues a run for `sopgraph queue worker`",
    )
    ms.set_defaults(fn=cmd_mcp_serve)
    mc = msub.add_parser(
        "convert",
        help="write an SOP's mcp.json (the mcpServers shape MCP clients use) from its "
        "deprecated mcp.yaml, which is moved to mcp.yaml.bak",
    )
    mc.add_argument("sop", metavar="SOP", help="the SOP folder (or its sop.yaml)")
    mc.set_defaults(fn=cmd_mcp_convert)
