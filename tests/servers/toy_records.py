"""A toy MCP server that serves records, for field measurements: tickets and orders by id.

Run over stdio: ``python tests/servers/toy_records.py``. ``get_ticket`` refuses an unknown id
(a tool error, as a real server refuses a record the caller may not see); ``get_order``
answers null for one (no such record).
"""

from __future__ import annotations

from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

# Every tool reads and changes nothing: a decision node may call it (docs/mcp-servers.md).
READ_ONLY = ToolAnnotations(readOnlyHint=True, idempotentHint=True)

TICKETS = {
    "717": {"id": "717", "status": "open", "opened_at": "2026-01-02T09:00:00Z",
            "owner": {"team": "network"}},
    "718": {"id": "718", "status": "closed", "opened_at": "2025-11-20T09:00:00Z",
            "closed_at": "2025-11-21T10:00:00Z", "owner": {"team": "desk"}},
    "719": {"id": "719", "status": "in_progress", "opened_at": "2026-01-05", "owner": None},
}  # fmt: skip
ORDERS = {
    "o1": {"id": "o1", "amount": 120.5, "delivered_at": "2026-01-01 12:00:00",
           "returned_at": "2026-01-20 12:00:00"},
    "o2": {"id": "o2", "amount": 40, "delivered_at": None},
}  # fmt: skip
mcp = FastMCP("records")


@mcp.tool(annotations=READ_ONLY)
def get_ticket(ticket_id: str) -> dict:
    """One IT ticket by id."""
    if ticket_id not in TICKETS:
        raise ValueError(f"no ticket {ticket_id!r} you may see")
    return TICKETS[ticket_id]


@mcp.tool(annotations=READ_ONLY)
def get_order(order_id: str) -> dict | None:
    """One order by id; null when there is none."""
    return ORDERS.get(order_id)


if __name__ == "__main__":
    mcp.run()
