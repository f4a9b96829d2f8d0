"""``sopgraph mcp serve``: its options, and sopgraph's MCP server (``sopgraph_server.py``)
served over stdio or streamable HTTP until the client or a signal stops it.

Over HTTP the tokens file is read before anything starts; the SOPs are discovered once, a SOP
that does not load skipped with one warning line. ``main`` is the same command run as a
module, a tokens problem one ``error:`` line and exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from sopgraph.graphs.untrusted_text import printable
from sopgraph.mcp_servers import sopgraph_server
from sopgraph.mcp_servers.http_transport import quiet_disconnects
from sopgraph.mcp_servers.server_auth import APPROVER_HELP, TOKENS_HELP, TokenError, load_tokens
from sopgraph.mcp_servers.sop_catalog import discover
from sopgraph.mcp_servers.sop_sessions import Hub
from sopgraph.mcp_servers.sopgraph_server import SERVER_APPROVALS, create_server


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="sopgraph mcp serve", description=sopgraph_server.__doc__.splitlines()[0]
    )
    add_serve_args(p)
    return p.parse_args(argv)


def add_serve_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    p.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="HTTP port (default 8000)")
    p.add_argument(
        "--checkpoint",
        help="SQLite file (default $SOPGRAPH_HOME/checkpoints.sqlite) or postgres://…, for all SOPs",
    )
    p.add_argument("--approval", choices=SERVER_APPROVALS, default="ask", help=APPROVAL_HELP)
    p.add_argument("--tokens", metavar="FILE", help=TOKENS_HELP)
    p.add_argument(
        "--queue",
        metavar="URL",
        help="a Postgres job queue (postgresql://…, also the checkpoint store): adds "
        "submit_run, which queues a run for `sopgraph queue worker`",
    )
    p.add_argument("--approver", metavar="NAME", help=APPROVER_HELP)


APPROVAL_HELP = (
    "gated actions: ask (default) pauses each for resume_run; approve or reject decides all; "
    "client lets run_sop's 'approval' argument decide"
)


def serve(args: argparse.Namespace) -> int:
    """Discover the SOPs and serve them until the client (stdio) or a signal (HTTP) stops us.

    Raises:
        TokenError: HTTP without a usable tokens file, or ``--approver`` over HTTP.
    """
    tokens = None
    if args.transport == "http":
        if getattr(args, "approver", None):
            raise TokenError("--approver is for stdio; over HTTP each token's identity is recorded")
        tokens = load_tokens(getattr(args, "tokens", None))  # before anything starts
        for warning in tokens.warnings:
            print(f"warning: {warning}", file=sys.stderr)
    catalog = discover()
    for problem in catalog.problems:
        print(f"warning: skipped {printable(problem)}", file=sys.stderr)
    queue = getattr(args, "queue", None)
    if queue and args.checkpoint not in (None, queue):
        raise TokenError("--queue: the queue's runs are read from its database; drop "
                         "--checkpoint or give it the same postgresql:// URL")  # fmt: skip
    hub = Hub(catalog, args.checkpoint or queue)
    if args.transport == "stdio":
        server = create_server(
            hub, approval=args.approval, operator=getattr(args, "approver", None), queue=queue
        )
        server.run("stdio")
        return 0
    server = create_server(
        hub, approval=args.approval, tokens=tokens, host=args.host, port=args.port, queue=queue
    )
    quiet_disconnects()

    async def go() -> None:
        async with hub.use():  # over HTTP the lifespan is per client session: hold SOPs open
            await server.run_streamable_http_async()

    print(
        f"sopgraph MCP server: http://{args.host}:{args.port}/mcp ({len(catalog.sops)} SOPs)",
        file=sys.stderr,
        flush=True,
    )
    asyncio.run(go())
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        return serve(parse_args(argv))
    except TokenError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
