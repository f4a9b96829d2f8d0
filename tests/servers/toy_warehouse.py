"""A toy SQL warehouse MCP server for tool-maker tests: one ``readings`` table in SQLite.

Run over stdio: ``python tests/servers/toy_warehouse.py``. Belt fill readings every 5 or 10
minutes per site, some null, arranged so that a query without the 15-minute window, or one
that treats null readings as data, gets some sites wrong.
"""

from __future__ import annotations

import sqlite3

from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

# Every tool reads and changes nothing: a decision node may call it (docs/mcp-servers.md).
READ_ONLY = ToolAnnotations(readOnlyHint=True, idempotentHint=True)

TIMES = ("2026-01-01 09:40:00", "2026-01-01 09:50:00", "2026-01-01 09:55:00", "2026-01-01 10:00:00")
FILL = {  # site -> fill % at TIMES (None: the sensor sent a null)
    "S1": (99, 60, 60, 60),
    "S2": (10, 40, 40, 40),
    "S3": (99, 45, 45, 45),
    "S4": (0, 55, 55, 55),
    "S6": (70, None, None, None),
    "S7": (80, 80, 80, 80),
    "S8": (20, 20, 20, 20),
}  # S5 has no rows at all

db = sqlite3.connect(":memory:", check_same_thread=False)
db.execute("CREATE TABLE readings (site TEXT, t TEXT, fill_pct REAL)")
for site, values in FILL.items():
    db.executemany(
        "INSERT INTO readings VALUES (?, ?, ?)",
        [(site, t, v) for t, v in zip(TIMES, values, strict=True)],
    )
mcp = FastMCP("warehouse")


@mcp.tool(annotations=READ_ONLY)
def list_tables() -> list[dict]:
    """Tables and their columns."""
    return [{"table": "readings", "columns": ["site TEXT", "t TEXT (naive UTC)", "fill_pct REAL"]}]


@mcp.tool(annotations=READ_ONLY)
def execute_query(sql: str) -> dict:
    """Run one read-only SELECT (SQLite dialect); returns columns and rows."""
    if not sql.lstrip().lower().startswith(("select", "with")):
        raise ValueError("only SELECT statements are allowed")
    cur = db.execute(sql)
    return {"columns": [d[0] for d in cur.description], "rows": [list(r) for r in cur.fetchall()]}


if __name__ == "__main__":
    mcp.run()
