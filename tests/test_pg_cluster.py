"""The throwaway PostgreSQL cluster: it serves a database, then leaves nothing behind."""

from __future__ import annotations

import socket

import psycopg
import pytest

import sopgraph.evals.pg_cluster as pg
from sopgraph.evals.pg_cluster import PgCluster, PostgresMissing


@pytest.mark.postgres
def test_cluster_serves_a_database_then_is_gone():
    with PgCluster(database="probe") as cluster:
        root, port = cluster.root, cluster.port
        assert cluster.dsn == f"postgresql://postgres@127.0.0.1:{port}/probe"
        with psycopg.connect(cluster.dsn) as conn:
            conn.execute("CREATE TABLE t (x int)")
            conn.execute("INSERT INTO t VALUES (41)")
            assert conn.execute("SELECT x + 1 FROM t").fetchone() == (42,)
        assert (root / "data" / "postmaster.pid").exists()
    assert not root.exists()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


def test_missing_postgres_is_one_line_with_the_install_hint(tmp_path, monkeypatch):
    monkeypatch.setattr(pg, "PG_ROOT", tmp_path)
    (tmp_path / "15" / "bin").mkdir(parents=True)  # a version folder without the server
    with pytest.raises(PostgresMissing) as err:
        PgCluster().start()
    msg = str(err.value)
    assert "\n" not in msg and "apt-get install -y postgresql" in msg


def test_newest_version_is_picked(tmp_path, monkeypatch):
    monkeypatch.setattr(pg, "PG_ROOT", tmp_path)
    for version in ("9.6", "13", "15"):
        bindir = tmp_path / version / "bin"
        bindir.mkdir(parents=True)
        (bindir / "initdb").touch()
        (bindir / "pg_ctl").touch()
    assert pg.find_bindir() == tmp_path / "15" / "bin"
