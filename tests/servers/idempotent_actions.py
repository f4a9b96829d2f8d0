"""An MCP action server for the exactly-once tests: ``open_valve`` appends one line per time it
really acts to the file ``$ACTIONS_LOG``; with ``--honour-key`` a request whose idempotency key
was done already gets the first result back and nothing is appended.

Run over stdio: ``python tests/servers/idempotent_actions.py [--honour-key]``.
"""

from __future__ import annotations

import os
import sys

from mcp.server.fastmcp import Context, FastMCP

from sopgraph.mcp_servers.idempotency import Done, request_key

HONOUR = "--honour-key" in sys.argv
done = Done(os.environ["ACTIONS_LOG"] + ".done.sqlite")
mcp = FastMCP("actions")


@mcp.tool()
def open_valve(valve: str, ctx: Context) -> dict:
    """Open a valve (appends a line to $ACTIONS_LOG each time it really acts)."""
    key = request_key(ctx)

    def act() -> dict:
        with open(os.environ["ACTIONS_LOG"], "a") as out:
            out.write(f"{valve} {key}\n")
        return {"valve": valve, "open": True, "key": key}

    return done.once(key if HONOUR else None, act)


if __name__ == "__main__":
    mcp.run()
