"""A tiny metric MCP server for tests: fixed values, and the trace context it was called with.

Run over stdio: ``python tests/servers/echo_metrics.py``.
"""

from __future__ import annotations

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import ToolAnnotations

# Every tool reads and changes nothing: a decision node may call it (docs/mcp-servers.md).
READ_ONLY = ToolAnnotations(readOnlyHint=True, idempotentHint=True)

VALUES = {"robotics.station_idle_pct": 31.2, "robotics.fault_count": 0}

mcp = FastMCP("echo_metrics")


@mcp.tool(annotations=READ_ONLY)
def execute_range_query(metric: str, site: str, ctx: Context) -> dict:
    """The mean of ``metric`` at ``site`` over the last 15 minutes."""
    meta = ctx.request_context.meta
    return {
        "metric": metric,
        "site": site,
        "value": VALUES.get(metric),
        "traceparent": getattr(meta, "traceparent", None) if meta else None,
    }


@mcp.tool(annotations=READ_ONLY)
def list_metrics() -> list[str]:
    """Every metric this server knows."""
    return sorted(VALUES)


@mcp.tool(annotations=READ_ONLY)
def broken_query(metric: str) -> dict:
    """Always fails, as a backend that is down would."""
    raise RuntimeError(f"backend down while reading {metric}")


if __name__ == "__main__":
    mcp.run()
