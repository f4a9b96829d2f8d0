"""Conveyance warehouse MCP server: read-only SQL over a DuckDB file, MotherDuck-style.

Tools: ``list_tables``, ``list_columns``, ``execute_query`` (one SELECT, paged).
Run: ``python -m sopgraph.mcp_servers.conveyance_warehouse --db PATH [--transport streamable-http]``.
"""

from __future__ import annotations

import functools

import duckdb
from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError

from sopgraph.mcp_servers.paging import DEFAULT_PAGE_SIZE, check_page, page_from_cursor
from sopgraph.mcp_servers.serving import READ_ONLY, parse_args, serve
from sopgraph.mcp_servers.sql import strip_sql

ENV_DB = "SOPGRAPH_CONVEYANCE_DB"


@functools.lru_cache(maxsize=1024)
def _readonly_select(sql: str) -> str:
    """``sql`` stripped, if it is one SELECT; else the ``ToolError`` that says why.

    Cached by text: tools send the same statement with new parameters on every call, and
    DuckDB's parse here costs about a sixth of a small query's call (a refusal raises, so is
    not cached).
    """
    text = strip_sql(sql)
    try:
        statements = duckdb.extract_statements(text)
    except duckdb.Error as exc:
        raise ToolError(f"SQL syntax error: {str(exc).splitlines()[0]}") from None
    if len(statements) != 1:
        raise ToolError(f"one statement per call (got {len(statements)}); split the query")
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        raise ToolError(
            f"read-only server: {kind.name} statements are refused; only SELECT (and WITH ... SELECT) run"
        )
    return text


def build_server(db: str) -> FastMCP:
    """A server over the DuckDB file ``db``, opened read-only once for all calls."""
    con = duckdb.connect(db, read_only=True)
    # Queries here are small and many: worker threads cost more than they save.
    con.execute("SET threads = 1")
    # A SELECT may still call read_csv() or glob() on the host's files: shut that door, and
    # lock the settings so no query can reopen it.
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    mcp = FastMCP(
        "conveyance_warehouse",
        log_level="WARNING",  # a log line per request costs more than the query
        instructions=(
            "Conveyance warehouse of the outbound dock (DuckDB SQL dialect). Start with "
            "list_tables and list_columns, then run SELECT queries with execute_query. "
            "Results are paged; when truncated is true, ask for next_page."
        ),
    )

    @mcp.tool(annotations=READ_ONLY)
    def list_tables() -> list[dict]:
        """List the warehouse's tables with their row and column counts."""
        rows = con.execute(
            "SELECT table_name, estimated_size, column_count FROM duckdb_tables() "
            "WHERE NOT temporary ORDER BY table_name"
        ).fetchall()
        return [{"table": t, "rows": n, "columns": c} for t, n, c in rows]

    @mcp.tool(annotations=READ_ONLY)
    def list_columns(table: str) -> list[dict]:
        """List a table's columns: name, SQL type and whether it may be NULL.

        Args:
            table: table name as given by list_tables.
        """
        rows = con.execute(
            "SELECT column_name, data_type, is_nullable FROM duckdb_columns() "
            "WHERE table_name = ? ORDER BY column_index",
            [table],
        ).fetchall()
        if not rows:
            names = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
            raise ToolError(f"no table '{table}'; tables are: {', '.join(sorted(names))}")
        return [{"name": n, "type": t, "nullable": bool(nl)} for n, t, nl in rows]

    @mcp.tool(annotations=READ_ONLY)
    def execute_query(
        sql: str,
        params: list[str | int | float | bool | None] | None = None,
        page: int = 0,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> dict:
        """Run one read-only SELECT (DuckDB dialect) and return one page of its rows.

        Args:
            sql: a single SELECT or WITH ... SELECT statement; writes are refused.
            params: values for the statement's ``?`` placeholders, in order (strings,
                numbers, booleans or null); use them instead of quoting values into ``sql``.
            page: page number, from 0.
            page_size: rows per page, 1 to 1000.

        Returns columns, column_types, rows (lists in column order; timestamps as ISO 8601,
        NULL as null), truncated (true when more rows exist) and next_page.
        """
        check_page(page, page_size)
        text = _readonly_select(sql)
        cur = con.cursor()
        try:
            cur.execute(text, params or [])
        except duckdb.Error as exc:
            raise ToolError(f"query failed: {str(exc).splitlines()[0]}") from None
        cols = [d[0] for d in cur.description]
        types = [str(d[1]) for d in cur.description]
        try:
            return page_from_cursor(cur.fetchmany, cols, types, page, page_size).model_dump()
        finally:
            cur.close()

    return mcp


def main(argv: list[str] | None = None) -> None:
    args = parse_args("conveyance_warehouse", ENV_DB, argv)
    serve(build_server(args.db), args)


if __name__ == "__main__":
    main()
