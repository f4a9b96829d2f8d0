"""``sopgraph ui``: the local run console (mcp_servers/console.py) in a browser: the runs of a
checkpoint store, one run's path on its SOP, and the approvals waiting, answered as a token's
identity; with ``--draft DIR``, also a draft's review page (mcp_servers/console_review.py):
the document beside the graph, the unused sentences, the failed checks, the judgement steps."""

from __future__ import annotations

import argparse
import ipaddress
import socket
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sopgraph.errors import UserError

_TOKENS_HELP = (
    "the tokens file (default $SOPGRAPH_MCP_TOKENS), as `sopgraph mcp serve --tokens`: lines "
    "'<identity> <token>'; log in with a token, and its identity is recorded as the approver"
)


def _port(text: str) -> int:
    """A TCP port, or 0 for any free one."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (0 to 65535)")
    return port


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UserError(
            f"--port {port}: cannot listen on {host}:{port} ({exc.strerror or exc});"
            " pick another --port or --host"
        ) from None
    sock.listen(128)
    return sock


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _tokens(path: str | None) -> Any:
    import os

    from sopgraph.mcp_servers.server_auth import TOKENS_ENV, load_tokens

    if not (path or os.environ.get(TOKENS_ENV)):
        raise UserError(
            f"sopgraph ui needs a tokens file: pass --tokens FILE (or set {TOKENS_ENV}=FILE), "
            "lines '<identity> <token>' as for `sopgraph mcp serve`; see docs/console.md"
        )
    return load_tokens(path)


def _drafts(folders: list[str]) -> dict[str, Path]:
    """The ``--draft`` folders by their pages' names, each read once now: a folder that is not
    a draft is one error line before the console starts."""
    from sopgraph.graphs.drafting.review_page import ReviewError, read_review
    from sopgraph.mcp_servers.console_review import draft_names

    for folder in folders:
        try:
            read_review(Path(folder))
        except ReviewError as exc:
            raise UserError(f"--draft {exc}") from None
    return draft_names([Path(f) for f in folders])


def cmd_ui(args: argparse.Namespace) -> int:
    from sopgraph.commands.runs import _store
    from sopgraph.runtime.runs import store_name

    tokens = _tokens(args.tokens)  # TokenError is a user error: one line
    for warning in tokens.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    store = _store(args.checkpoint)
    sops = [Path(s) for s in args.sop or []]
    for sop in sops:
        if not sop.exists():
            raise UserError(f"--sop {sop}: no such SOP file or folder")
    drafts = _drafts(args.draft or [])
    sock = _listen(args.host, args.port)
    import uvicorn

    from sopgraph.mcp_servers.console import Console
    from sopgraph.mcp_servers.console_review import ReviewConsole

    if drafts:
        console = ReviewConsole(store, tokens, sops=sops, approval=args.approval, drafts=drafts)
    else:
        console = Console(store, tokens, sops=sops, approval=args.approval)
    app = console.app()
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    if not _loopback(args.host):
        print(
            f"warning: --host {args.host} is not loopback: tokens and cookies cross the network "
            "in clear (plain HTTP); put TLS in front, or keep the console on 127.0.0.1",
            file=sys.stderr,
        )
    print(f"sopgraph console: http://{shown}:{port}/ (runs in {store_name(store)})", flush=True)
    for name, folder in drafts.items():
        print(f"draft review: http://{shown}:{port}/drafts/{quote(name)} ({folder})", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    return 0


def register(sub: Any) -> None:
    """Register ``ui`` on the top-level subparsers."""
    from sopgraph.commands.runs import _STORE_HELP

    u = sub.add_parser(
        "ui", help="a local web console: the runs, each run's path on its SOP, approve/reject"
    )
    u.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    u.add_argument("--port", type=_port, default=8377, help="port (8377; 0: any free port)")
    u.add_argument(
        "--sop", action="append", metavar="SOP",
        help="only the runs of this SOP (file or folder); repeat for more (default: every run)",
    )  # fmt: skip
    u.add_argument("--checkpoint", help=_STORE_HELP)
    u.add_argument("--tokens", metavar="FILE", help=_TOKENS_HELP)
    u.add_argument(
        "--approval", choices=["ask", "reject"], default="ask",
        help="ask (default): the buttons approve or reject; reject: reject only, as "
        "`mcp serve --approval reject`",
    )  # fmt: skip
    u.add_argument(
        "--draft", action="append", metavar="DIR",
        help="also a review page for this draft folder (`sopgraph draft DOC -o DIR`) at "
        "/drafts/<folder name>: the document beside the graph; repeat for more",
    )  # fmt: skip
    u.set_defaults(fn=cmd_ui)
