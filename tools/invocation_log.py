"""The invocation log: every executor call of every run, in SQLite, for audit and drift.

One row per call: run id, node, tool, version, executor, inputs, output, latency, error and
a UTC timestamp. Each ``record`` is its own short transaction on a WAL database, so several
asyncio tasks, threads and processes can log to one file at once; a log that ``defer()``
holds its rows until ``flush()`` and writes them in one transaction (a runner flushes before
each durable checkpoint write, so that no checkpointed node ever lacks its row; with
checkpoints in memory it writes the rows of many runs together, at most ``hold_s`` after the
first one, as a group commit).

Example:
    >>> log = InvocationLog(Path(".sopgraph/invocations.db"))
    >>> log.record(run_id="r1", node="obs_idle", tool="obs_idle", version=1,
    ...            inputs={"site": "BFI4"}, output={"value": "true"}, latency_ms=3.1, error=None)
    >>> log.query(run_id="r1")[0]["output"]
    {'value': 'true'}
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel

from sopgraph.tools.sqlite_wal import WalCheckpoints, use_wal

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
_INSERT = (
    "INSERT INTO invocations (ts, run_id, node, tool, version, executor, inputs,"
    " output, latency_ms, error, pid) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
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


MAX_HELD = 1024  # held rows that are written at once, whatever ``hold_s`` says

_JSON_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def _dumps(value: Any) -> str:
    """JSON text with sorted keys (orjson: a tenth of ``json.dumps``'s time on a row's
    parameters); what orjson cannot encode (an int over 64 bits) goes through ``json``."""
    try:
        return orjson.dumps(value, default=_to_json, option=_JSON_OPTIONS).decode()
    except TypeError:
        return json.dumps(value, default=_to_json, sort_keys=True)


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
        self._wal = WalCheckpoints.for_file(str(self.path))  # no commit waits for a checkpoint
        self._deferred = False
        self._hold_s: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._pending: list[tuple[Any, ...]] = []

    def defer(self, hold_s: float | None = None) -> None:
        """Hold the rows ``record`` is given until ``flush``: one commit for many calls (a commit
        costs more than the insert). The holder must flush (before a checkpoint, at its end);
        with ``hold_s`` the log also flushes itself that long after it starts holding rows
        (on the running event loop), or once ``MAX_HELD`` rows wait."""
        self._deferred = True
        self._hold_s = hold_s

    def flush(self) -> None:
        """Write the held rows (this process's) in one transaction."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._pending:
            return
        rows, self._pending = self._pending, []  # one swap: concurrent records go to the next
        pid = os.getpid()
        rows = [r for r in rows if r[-1] == pid]  # a forked child drops its parent's rows
        if rows:
            with self._conn() as conn:  # BEGIN ... COMMIT (or ROLLBACK on an error)
                conn.execute("BEGIN")
                conn.executemany(_INSERT, rows)
            self._wal.committed()

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
        use_wal(conn)
        conn.execute("PRAGMA synchronous = NORMAL")
        self._wal.adopt(conn)
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
        row = (
            ts,
            run_id,
            node,
            tool,
            version,
            executor,
            _dumps(inputs),
            None if output is None else _dumps(output),
            float(latency_ms),
            error,
            os.getpid(),
        )
        if self._deferred:
            self._pending.append(row)
            if len(self._pending) >= MAX_HELD:
                self.flush()
            elif self._hold_s is not None and self._timer is None:
                try:
                    loop = asyncio.get_running_loop()
                except RuntimeError:  # no event loop in this thread to wait on: write now
                    self.flush()
                else:
                    self._timer = loop.call_later(self._hold_s, self.flush)
        else:
            self._conn().execute(_INSERT, row)
            self._wal.committed()

    def query(
        self, run_id: str | None = None, node: str | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """Logged calls, oldest first, filtered by run and/or node (held rows written first).

        With ``limit``, the latest ``limit`` matching calls (still oldest first).
        """
        self.flush()
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
        """Write the held rows, close every connection this object opened; a later call
        reopens one."""
        self.flush()
        with self._lock:
            conns, self._all = self._all, []
        for pid, conn in conns:
            if pid == os.getpid():  # a forked child must not touch its parent's connections
                conn.close()
        self._local = threading.local()
