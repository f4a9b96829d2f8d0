"""Ops store MCP server: read-only SQL over a SQLite file (alarms, equipment states,
maintenance log, tickets, staffing, stations).

Tools: ``list_tables``, ``list_columns``, ``execute_query`` (one SELECT, paged).
Run: ``python -m sopgraph.mcp_servers.ops_store --db PATH [--transport streamable-http]``.
"""

from __future__ import annotations

import sqlite3

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError

from sopgraph.mcp_servers import drift as drift_mod
from sopgraph.mcp_servers.paging import DEFAULT_PAGE_SIZE, check_page, page_from_cursor
from sopgraph.mcp_servers.serving import READ_ONLY, parse_args, serve
from sopgraph.mcp_servers.sql import strip_sql

ENV_DB = "SOPGRAPH_OPS_DB"
# Authorizer actions a SELECT needs; anything else (writes, ATTACH, PRAGMA writes) is denied.
_ALLOWED = {
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_FUNCTION,
    33,
}  # 33: RECURSIVE


def _authorize(action: int, *_: object) -> int:
    return sqlite3.SQLITE_OK if action in _ALLOWED else sqlite3.SQLITE_DENY


def _first_word(sql: str) -> str:
    return sql.lstrip("( \n\t").split(None, 1)[0].upper() if sql.strip() else ""


def _value_type(values: list) -> str:
    for v in values:
        if v is not None:
            return {int: "INTEGER", float: "REAL", str: "TEXT"}.get(type(v), "BLOB")
    return "NULL"


def build_server(db: str) -> FastMCP:
    """A server over the SQLite file ``db``, opened read-only once for all calls."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, check_same_thread=False)
    con.execute("PRAGMA query_only = ON")
    tables = [
        r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")
    ]
    con.set_authorizer(_authorize)
    drifts = drift_mod.load("ops")
    drifted: dict[tuple, sqlite3.Connection] = {}

    def conn_for(sql: str, params: list | None) -> sqlite3.Connection:
        """The original store, or a drifted copy for queries about instants after an onset."""
        live = drift_mod.active(drifts, drift_mod.sql_reference_time(sql, params))
        if not live:
            return con
        key = tuple(d.kind for d in live)
        if key not in drifted:
            copy = sqlite3.connect(":memory:", check_same_thread=False)
            con.set_authorizer(None)
            try:
                con.backup(copy)
            finally:
                con.set_authorizer(_authorize)
            for d in live:
                if d.kind == "type" and d.field == "state":  # names become number codes
                    case = " ".join(
                        f"WHEN '{k}' THEN {v}" for k, v in drift_mod.STATE_CODES.items()
                    )
                    copy.executescript(
                        "CREATE TABLE es2 AS SELECT site, equipment_id, equipment_type, "
                        f"CASE state {case} END AS state, started_at, ended_at "
                        "FROM equipment_states; DROP TABLE equipment_states; "
                        "ALTER TABLE es2 RENAME TO equipment_states;"
                    )
            copy.execute("PRAGMA query_only = ON")
            copy.set_authorizer(_authorize)
            drifted[key] = copy
        return drifted[key]

    mcp = FastMCP(
        "ops_store",
        log_level="WARNING",  # a log line per request costs more than the query
        instructions=(
            "Operations store of the outbound dock (SQLite SQL dialect): stations, "
            "equipment_states, maintenance_log, tickets, staffing, alarms. Start with "
            "list_tables and list_columns, then run SELECT queries with execute_query. "
            "Results are paged; when truncated is true, ask for next_page."
        ),
    )

    @mcp.tool(annotations=READ_ONLY)
    def list_tables() -> list[dict]:
        """List the store's tables with their row counts."""
        return [
            {"table": t, "rows": con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]}
            for t in tables
        ]

    @mcp.tool(annotations=READ_ONLY)
    def list_columns(table: str) -> list[dict]:
        """List a table's columns: name, declared SQL type, whether it may be NULL, key part.

        Args:
            table: table name as given by list_tables.
        """
        if table not in tables:
            raise ToolError(f"no table '{table}'; tables are: {', '.join(tables)}")
        con.set_authorizer(None)
        try:
            info = con.execute(f'PRAGMA table_info("{table}")').fetchall()
        finally:
            con.set_authorizer(_authorize)
        return [
            {"name": r[1], "type": r[2], "nullable": not r[3], "primary_key": bool(r[5])}
            for r in info
        ]

    @mcp.tool(annotations=READ_ONLY)
    def execute_query(
        sql: str,
        params: list[str | int | float | bool | None] | None = None,
        page: int = 0,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> dict:
        """Run one read-only SELECT (SQLite dialect) and return one page of its rows.

        Args:
            sql: a single SELECT or WITH ... SELECT statement; writes are refused.
            params: values for the statement's ``?`` placeholders, in order (strings,
                numbers, booleans or null); use them instead of quoting values into ``sql``.
            page: page number, from 0.
            page_size: rows per page, 1 to 1000.

        Returns columns, column_types, rows (lists in column order; NULL as null),
        truncated (true when more rows exist) and next_page.
        """
        check_page(page, page_size)
        text = strip_sql(sql)
        if _first_word(text) not in ("SELECT", "WITH", "VALUES"):
            raise ToolError(
                f"read-only server: {_first_word(text) or 'empty'} statements are refused; "
                "only SELECT (and WITH ... SELECT) run"
            )
        cur = conn_for(text, params).cursor()
        try:
            cur.execute(text, params or [])
        except sqlite3.DatabaseError as exc:
            msg = str(exc)
            if "not authorized" in msg or "readonly" in msg:
                raise ToolError(f"read-only server: refused ({msg})") from None
            raise ToolError(f"query failed: {msg}") from None
        except sqlite3.ProgrammingError as exc:
            if "binding" in str(exc):
                raise ToolError(f"query refused: {exc}; give one param per ? placeholder") from None
            raise ToolError(f"query refused: {exc}; send one statement per call") from None
        desc = cur.description or []
        cols = [d[0] for d in desc]
        try:
            result = page_from_cursor(cur.fetchmany, cols, [""] * len(cols), page, page_size)
        finally:
            cur.close()
        # SQLite types values, not columns: report what this page holds.
        result.column_types = [_value_type([r[i] for r in result.rows]) for i in range(len(cols))]
        return result.model_dump()

    return mcp


def main(argv: list[str] | None = None) -> None:
    args = parse_args("ops_store", ENV_DB, argv)
    serve(build_server(args.db), args)


if __name__ == "__main__":
    main()
