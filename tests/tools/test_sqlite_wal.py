"""WAL checkpoints run in a background thread, never in a writer's commit."""

from __future__ import annotations

import sqlite3
import time

from sopgraph.tools import sqlite_wal
from sopgraph.tools.sqlite_wal import WalCheckpoints


def _writer(path):
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE IF NOT EXISTS t (x TEXT)")
    return conn


def test_a_writer_never_checkpoints_the_thread_does(tmp_path, monkeypatch):
    path = str(tmp_path / "db.sqlite")
    wal = WalCheckpoints.for_file(path)
    assert WalCheckpoints.for_file(path) is wal  # one per file and process
    conn = _writer(path)
    wal.adopt(conn)
    assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    for _ in range(20):  # 2000 pages: SQLite's default would have checkpointed in a commit
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO t VALUES (?)", [("x" * 4000,)] * 100)
        conn.execute("COMMIT")
    db = tmp_path / "db.sqlite"
    assert db.stat().st_size < 100_000  # the 8 MB are all in the WAL: no commit copied them
    monkeypatch.setattr(sqlite_wal, "EVERY", 1)
    wal.committed()
    deadline = time.time() + 10
    while db.stat().st_size < 8_000_000:  # the thread's checkpoint copies them
        assert time.time() < deadline, "the checkpoint thread never ran"
        time.sleep(0.02)
    assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 2000
    conn.close()


def test_wal_mode_waits_for_a_writer_on_a_new_file(tmp_path):
    """Asking for WAL while another connection writes a rollback-journal file: SQLite answers
    "locked" at once, busy timeout or not; use_wal waits the writer out."""
    import sqlite3
    import threading

    from sopgraph.tools.sqlite_wal import use_wal

    path = tmp_path / "new.sqlite"
    writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    writer.execute("CREATE TABLE t (x)")
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO t VALUES (1)")
    other = sqlite3.connect(path, timeout=5.0)
    other.execute("SELECT count(*) FROM t").fetchall()  # the file exists and is readable
    threading.Timer(0.2, lambda: writer.execute("COMMIT")).start()
    use_wal(other)
    assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    other.close()
    writer.close()
