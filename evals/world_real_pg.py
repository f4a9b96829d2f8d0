"""The triage world's tables in a real PostgreSQL, read through database-mcp-postgres (PyPI).

The conveyance warehouse (DuckDB) and the ops store (SQLite) are copied into two databases of
one throwaway cluster (``pg_cluster.PgCluster``), with the types an operations team's Postgres
would give them: times as ``timestamp`` (UTC, no zone), counts as ``bigint``, measures as
``double precision``. The SOP copy's ``conveyance`` and ``ops`` servers become
``database-mcp-postgres`` (read-only, ``execute_sql``), from the real stack's own venv
(``world_real_stack.postgres_server``).
``tools.kit.sql`` sends such a server each statement with its parameters as literals.

Example:
    >>> with PgCluster(database="conveyance") as pg:             # doctest: +SKIP
    ...     dsns = load_world_tables(paths, pg)
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

SERVERS = ("conveyance", "ops")
# SQLite's declared TEXT holds times: the ops store's *_at and *_start columns
TIME_SUFFIXES = ("_at", "_start", "_interval")
PG_TYPES = {
    "VARCHAR": "text", "TEXT": "text", "DOUBLE": "double precision", "REAL": "double precision",
    "INTEGER": "bigint", "BIGINT": "bigint", "TIMESTAMP": "timestamp", "BOOLEAN": "boolean",
}  # fmt: skip


def _pg_type(column: str, declared: str) -> str:
    if column.endswith(TIME_SUFFIXES):
        return "timestamp"
    return PG_TYPES.get(declared.upper().split("(")[0], "text")


def _duckdb_tables(path: Path) -> dict[str, tuple[list[tuple[str, str]], list[tuple]]]:
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        out = {}
        for (table,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall():
            cols = con.execute(
                "SELECT column_name, data_type FROM information_schema.columns "
                "WHERE table_name = ? ORDER BY ordinal_position",
                [table],
            ).fetchall()
            out[table] = (cols, con.execute(f'SELECT * FROM "{table}"').fetchall())
        return out
    finally:
        con.close()


def _sqlite_tables(path: Path) -> dict[str, tuple[list[tuple[str, str]], list[tuple]]]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        out = {}
        names = con.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        for (table,) in names:
            cols = [(r[1], r[2]) for r in con.execute(f'PRAGMA table_info("{table}")')]
            out[table] = (cols, con.execute(f'SELECT * FROM "{table}"').fetchall())
        return out
    finally:
        con.close()


def _copy(dsn: str, tables: dict[str, tuple[list[tuple[str, str]], list[tuple]]]) -> int:
    import psycopg

    n = 0
    with psycopg.connect(dsn, autocommit=True) as con:
        for table, (cols, rows) in tables.items():
            defs = ", ".join(f'"{c}" {_pg_type(c, t)}' for c, t in cols)
            con.execute(f'DROP TABLE IF EXISTS "{table}"')
            con.execute(f'CREATE TABLE "{table}" ({defs})')
            names = ", ".join(f'"{c}"' for c, _ in cols)
            with con.cursor().copy(f'COPY "{table}" ({names}) FROM STDIN') as copy:
                for row in rows:
                    copy.write_row(row)
            con.execute(f'ANALYZE "{table}"')
            n += len(rows)
    return n


def load_world_tables(paths: Any, cluster: Any) -> dict[str, str]:
    """Copy the world's conveyance and ops tables into ``cluster`` (one database each, made
    here); returns server -> DSN. ``cluster``: a started ``PgCluster``."""
    import psycopg

    base = cluster.dsn.rsplit("/", 1)[0]
    with psycopg.connect(cluster.dsn, autocommit=True) as con:
        for server in SERVERS:
            if server != cluster.database:
                con.execute(f'DROP DATABASE IF EXISTS "{server}"')
                con.execute(f'CREATE DATABASE "{server}"')
    dsns = {server: f"{base}/{server}" for server in SERVERS}
    _copy(dsns["conveyance"], _duckdb_tables(Path(paths.conveyance)))
    _copy(dsns["ops"], _sqlite_tables(Path(paths.ops)))
    return dsns
