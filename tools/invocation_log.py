"""The invocation log: every executor call of every run, in SQLite, for audit and drift.

One row per call: run id, node, tool, version, executor, inputs, output, latency, error and
a UTC timestamp. Each ``record`` is its own short transaction on a WAL database, so several
asyncio tasks, threads and processes can log to one file at once.

Example:
    >>> log = InvocationLog(Path(".sopgraph/invocations.db"))
    >>> log.record(run_id="r1", node="obs_idle", tool="obs_idle", version=1,
    ...            inputs={"site": "BFI4"}, output={"value": "true"}, latency_ms=3.1, error=None)
    >>> log.query(run_id="r1")[0]["output"]
    {'value': 'true'}
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel

_SCHEMA = """
CREATE TABLE IF NOT EXISTS invocations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ts TEXT NOT NULL,
    run_id TEXT NOT NULL,
    node TEXT NOT NULL,
    tool TEXT NOT NULL,
    version INTEGER,
    executor TEXT NOT NULL,
    inputs TEXT NOT NULL,
    output TEXT,
    latency_ms REAL NOT NULL,
    error TEXT,
    pid INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS invocations_run_id ON invocations (run_id);
CREATE INDEX IF NOT EXISTS invocations_node ON invocations (node, id);
"""
_COLUMNS = (
    "id",
    "ts",
    "run_id",
    "node",
    "tool",
    "version",
    "executor",
    "inputs",
    "output",
    "latency_ms",
    "error",
    "pid",
)


def _to_json(value: Any) -> Any:
    """``json.dumps`` fallback: pydantic models, paths, dates, sets; anything else as repr."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    if isinstance(value, Path | dt.date | dt.datetime):
        return str(value)
    return repr(value)


class InvocationLog:
    """An append-only SQLite log of executor calls, created on first use.

    A connection is opened per process and thread and reused, so ``record`` costs one
    small insert; after ``fork`` the child opens its own.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self._local = threading.local()
        self._all: list[tuple[int, sqlite3.Connection]] = []
        self._lock = threading.Lock()

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            return conn
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Autocommit (isolation_level=None): each INSERT is its own short transaction.
        conn = sqlite3.connect(
            self.path, timeout=30.0, isolation_level=None, check_same_thread=False
        )
        conn.execute("PRAGMA busy_timeout = 30000")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.executescript(_SCHEMA)
        self._local.conn, self._local.pid = conn, os.getpid()
        with self._lock:
            self._all.append((os.getpid(), conn))
        return conn

    def record(
        self,
        *,
        run_id: str,
        node: str,
        tool: str,
        version: int | None,
        inputs: dict[str, Any],
        output: dict[str, Any] | BaseModel | None,
        latency_ms: float,
        error: str | None,
        executor: str = "tool",
    ) -> None:
        """Append one call. ``inputs`` and ``output`` are stored as JSON text."""
        if isinstance(output, BaseModel):
            output = output.model_dump(mode="json")
        ts = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
        self._conn().execute(
            "INSERT INTO invocations (ts, run_id, node, tool, version, executor, inputs,"
            " output, latency_ms, error, pid) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                ts,
                run_id,
                node,
                tool,
                version,
                executor,
                json.dumps(inputs, default=_to_json, sort_keys=True),
                None if output is None else json.dumps(output, default=_to_json, sort_keys=True),
                float(latency_ms),
                error,
                os.getpid(),
            ),
        )

    def query(
        self, run_id: str | None = None, node: str | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """Logged calls, oldest first, filtered by run and/or node.

        With ``limit``, the latest ``limit`` matching calls (still oldest first).
        """
        where, args = [], []
        if run_id is not None:
            where.append("run_id = ?")
            args.append(run_id)
        if node is not None:
            where.append("node = ?")
            args.append(node)
        sql = f"SELECT {', '.join(_COLUMNS)} FROM invocations"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(int(limit))
        rows = self._conn().execute(sql, args).fetchall()
        out = []
        for row in reversed(rows):
            rec = dict(zip(_COLUMNS, row, strict=True))
            rec["inputs"] = json.loads(rec["inputs"])
            rec["output"] = None if rec["output"] is None else json.loads(rec["output"])
            out.append(rec)
        return out

    def close(self) -> None:
        """Close every connection this object opened; a later call reopens one."""
        with self._lock:
            conns, self._all = self._all, []
        for pid, conn in conns:
            if pid == os.getpid():  # a forked child must not touch its parent's connections
                conn.close()
        self._local = threading.local()
