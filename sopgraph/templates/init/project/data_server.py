"""The shop's data server: read-only SQL over data.sqlite, served over MCP (stdio).

sopgraph starts it as mcp.yaml says; the tools read it with `?` parameters through
`execute_query`. Try it alone: `python data_server.py --db data.sqlite` (it waits on stdin).
"""

from __future__ import annotations

import argparse
import sqlite3

from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

# Every tool reads and changes nothing: a decision node may call it (docs/mcp-servers.md).
READ_ONLY = ToolAnnotations(readOnlyHint=True, idempotentHint=True)


def build_server(db: str) -> FastMCP:
    """An MCP server over the SQLite file ``db``, opened read-only."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, check_same_thread=False)
    mcp = FastMCP("shop", log_level="WARNING")

    @mcp.tool(annotations=READ_ONLY)
    def list_tables() -> list[str]:
        """The tables of the shop's database."""
        return [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]

    @mcp.tool(annotations=READ_ONLY)
    def list_columns(table: str) -> list[dict]:
        """The columns of one table, each with its SQLite type (the tool-maker and the Check
        fallback read the catalog from list_tables and list_columns)."""
        if table not in list_tables():
            raise ValueError(f"no table {table!r}; list_tables names them")
        return [{"name": r[1], "type": r[2]} for r in con.execute(f'PRAGMA table_info("{table}")')]

    @mcp.tool(annotations=READ_ONLY)
    def execute_query(
        sql: str,
        params: list[str | int | float | bool | None] | None = None,
        page: int = 0,
        page_size: int = 500,
    ) -> dict:
        """Run one SELECT (SQLite dialect) and return one page of its rows.

        Args:
            sql: a single SELECT statement, values as `?` placeholders.
            params: the values of the placeholders, in order.
            page: page number, from 0.
            page_size: rows per page.
        """
        if not sql.lstrip().upper().startswith(("SELECT", "WITH")):
            raise ValueError("only SELECT statements run on this server")
        cur = con.execute(sql, params or [])
        columns = [d[0] for d in cur.description or []]
        rows = [list(r) for r in cur.fetchall()]
        start = page * page_size
        truncated = len(rows) > start + page_size
        return {
            "columns": columns,
            "rows": rows[start : start + page_size],
            "truncated": truncated,
            "next_page": page + 1 if truncated else None,
        }

    return mcp


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="the SQLite file to serve")
    build_server(parser.parse_args().db).run()  # stdio
