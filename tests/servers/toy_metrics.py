"""A toy metric MCP server for CodeAct tests: a few metrics per site, one tool that always fails.

Run over stdio: ``python tests/servers/toy_metrics.py [--name robotics]``; the name only
changes the server's self-description, so one script can play several servers.
"""

from __future__ import annotations

import sys

from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

# Every tool reads and changes nothing: a decision node may call it (docs/mcp-servers.md).
READ_ONLY = ToolAnnotations(readOnlyHint=True, idempotentHint=True)

VALUES = {
    "station_idle_pct": {"FC1": 31.2, "FC2": 12.5},
    "fault_count": {"FC1": 0, "FC2": 3},
    "belt_fill_pct": {"FC1": 91.0, "FC2": 40.0},
}

NAME = sys.argv[sys.argv.index("--name") + 1] if "--name" in sys.argv else "toy_metrics"
mcp = FastMCP(NAME)


@mcp.tool(annotations=READ_ONLY)
def list_metrics() -> list[str]:
    """Every metric this server knows."""
    return sorted(VALUES)


@mcp.tool(annotations=READ_ONLY)
def execute_query(metric: str, site: str, minutes: int = 15) -> dict:
    """The mean of ``metric`` at ``site`` over the last ``minutes``; value is null when unknown."""
    return {
        "metric": metric,
        "site": site,
        "minutes": minutes,
        "value": VALUES.get(metric, {}).get(site),
    }


@mcp.tool(annotations=READ_ONLY)
def broken_query(metric: str) -> dict:
    """Always fails, as a backend that is down would."""
    raise RuntimeError(f"backend down while reading {metric}")


if __name__ == "__main__":
    mcp.run()
