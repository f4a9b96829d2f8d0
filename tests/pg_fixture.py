"""A throwaway PostgreSQL server for the tests marked ``postgres``.

Import the fixture into a test module: ``from pg_fixture import pg_dsn  # noqa: F401``.
It fails (rather than skips) without PostgreSQL: ``make test`` installs it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sopgraph.evals.pg_cluster import PgCluster, PostgresMissing


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    """The ``postgresql://`` URL of a fresh database on a private cluster, for the session."""
    cluster = PgCluster(database="sopgraph_test")
    try:
        cluster.start()
    except PostgresMissing as exc:
        cluster.stop()
        pytest.fail(str(exc), pytrace=False)
    try:
        yield cluster.dsn
    finally:
        cluster.stop()
