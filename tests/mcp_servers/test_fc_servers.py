"""The fulfillment-center data servers, each started as a real stdio process with the MCP client."""

from __future__ import annotations

import json
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from sopgraph.evals.fc_triage.build import build_world


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> object:
    return build_world(
        tmp_path_factory.mktemp("home"), seed=3, progress=False, days=3, sites=1, scenarios=50
    )


@asynccontextmanager
async def session(module: str, db: Path):
    params = StdioServerParameters(
        command=sys.executable, args=["-m", f"sopgraph.mcp_servers.{module}", "--db", str(db)]
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        yield s


async def call(s: ClientSession, tool: str, args: dict) -> tuple[bool, object]:
    """(is_error, parsed result or error text)."""
    r = await s.call_tool(tool, args)
    if r.isError:
        return True, r.content[0].text
    if r.structuredContent is not None:
        sc = r.structuredContent
        return False, sc.get("result", sc) if set(sc) == {"result"} else sc
    return False, json.loads(r.content[0].text)


async def test_robotics_tools_and_annotations(world):
    async with session("robotics_metrics", world.robotics) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        assert {
            "list_metrics",
            "get_metric_metadata",
            "execute_query",
            "execute_range_query",
        } <= set(tools)
        assert all(t.annotations and t.annotations.readOnlyHint for t in tools.values())
        err, res = await call(s, "list_metrics", {"match": "pick", "page_size": 2})
        assert not err and res["metrics"] == ["pick_attempts", "pick_error_pct"]
        assert res["truncated"] is True and res["next_page"] == 1
        err, res = await call(s, "list_metrics", {"match": "pick", "page": 1, "page_size": 2})
        assert (
            res["metrics"] == ["pick_errors"]
            and res["truncated"] is False
            and res["next_page"] is None
        )
        err, meta = await call(s, "get_metric_metadata", {"metric": "station_idle_pct"})
        assert meta["unit"] == "percent" and meta["series"] == 8


async def test_robotics_range_query_matches_store(world):
    import duckdb

    con = duckdb.connect(str(world.robotics), read_only=True)
    expect = con.execute(
        "SELECT avg(value) FROM samples WHERE metric='station_idle_pct' AND site='BFI4' AND station='ST02' "
        "AND ts > TIMESTAMP '2025-03-04 11:45:00' AND ts <= TIMESTAMP '2025-03-04 12:00:00'"
    ).fetchone()[0]
    con.close()
    async with session("robotics_metrics", world.robotics) as s:
        q = 'avg_over_time(station_idle_pct{site="BFI4",station="ST02"}[15m])'
        err, res = await call(s, "execute_query", {"query": q, "time": "2025-03-04T12:00:00Z"})
        assert not err
        (series,) = res["data"]["result"]
        assert series["metric"]["station"] == "ST02" and "__name__" not in series["metric"]
        assert float(series["value"][1]) == pytest.approx(expect)
        err, res = await call(
            s,
            "execute_range_query",
            {
                "query": 'station_idle_pct{site="BFI4"}',
                "start": "2025-03-04T11:00:00Z",
                "end": "2025-03-04T12:00:00Z",
                "step": "5m",
                "page_size": 3,
            },
        )
        assert not err and len(res["data"]["result"]) == 3
        assert res["truncated"] is True and res["next_page"] == 1 and res["series_total"] == 8
        assert len(res["data"]["result"][0]["values"]) == 13


PROMQL_ERRORS = [
    ("rate(station_idle_pct[5m])", "unsupported function 'rate'"),
    ('station_idle_pct{site="BFI4"', "expected"),
    ("station_idle_pct[15m]", "wrap it"),
    ('station_idle_pct{zone="x"}', "unknown label 'zone'"),
    ("avg_over_time(station_idle_pct[15])", "duration"),
    ("no_such_metric", "unknown metric"),
    ("", "metric name"),
]


async def test_promql_errors_are_one_clear_line(world):
    async with session("robotics_metrics", world.robotics) as s:
        for query, needle in PROMQL_ERRORS:
            err, text = await call(
                s, "execute_query", {"query": query, "time": "2025-03-04T12:00:00Z"}
            )
            assert err and needle in text, (query, text)
            assert "\n" not in text.strip() and "Traceback" not in text
        err, text = await call(
            s,
            "execute_range_query",
            {"query": "station_idle_pct", "start": "2025-03-04", "end": "2025-03-01"},
        )
        assert err and "end is before start" in text


@pytest.mark.parametrize(
    "module,db_attr,table",
    [("conveyance_warehouse", "conveyance", "conveyance_5m"), ("ops_store", "ops", "staffing")],
)
async def test_sql_servers_page_and_refuse_writes(world, module, db_attr, table):
    db = getattr(world, db_attr)
    async with session(module, db) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        assert {"list_tables", "list_columns", "execute_query"} <= set(tools)
        assert all(t.annotations.readOnlyHint for t in tools.values())
        err, tables = await call(s, "list_tables", {})
        assert table in [t["table"] for t in tables]
        err, cols = await call(s, "list_columns", {"table": table})
        assert not err and cols[0]["name"] == "site"
        err, text = await call(s, "list_columns", {"table": "nope"})
        assert err and "no table 'nope'" in text
        err, p0 = await call(
            s, "execute_query", {"sql": f"SELECT * FROM {table} ORDER BY 1, 2", "page_size": 5}
        )
        assert not err and p0["row_count"] == 5 and p0["truncated"] is True and p0["next_page"] == 1
        err, p1 = await call(
            s,
            "execute_query",
            {"sql": f"SELECT * FROM {table} ORDER BY 1, 2", "page": 1, "page_size": 5},
        )
        assert p1["rows"][0] != p0["rows"][0]
        err, last = await call(s, "execute_query", {"sql": f"SELECT count(*) AS n FROM {table}"})
        assert last["truncated"] is False and last["next_page"] is None
        for bad in (
            f"DROP TABLE {table}",
            f"INSERT INTO {table} SELECT * FROM {table}",
            f"DELETE FROM {table}",
        ):
            err, text = await call(s, "execute_query", {"sql": bad})
            assert err and "read-only" in text, text
        err, text = await call(s, "execute_query", {"sql": "SELECT 1; DROP TABLE x"})
        assert err
        err, text = await call(s, "execute_query", {"sql": "SELECT * FROM", "page_size": 5})
        assert err and "Traceback" not in text
        err, text = await call(s, "execute_query", {"sql": "SELECT 1", "page_size": 5000})
        assert err and "page_size" in text
    # The refused writes left the data as it was.
    async with session(module, db) as s:
        err, res = await call(s, "execute_query", {"sql": f"SELECT count(*) FROM {table}"})
        assert res["rows"][0][0] > 0


async def test_conveyance_nulls_come_back_as_null(world):
    async with session("conveyance_warehouse", world.conveyance) as s:
        err, text = await call(
            s, "execute_query", {"sql": "SELECT * FROM read_csv('/etc/hostname')"}
        )
        assert err and "disabled" in text  # no reading the host's files through SQL
        err, res = await call(
            s,
            "execute_query",
            {
                "sql": "SELECT count(*) FILTER (WHERE belt_nw_fill_ratio IS NULL) AS n, max(upstream_rate_ratio) AS hi FROM conveyance_5m"
            },
        )
        assert not err and res["rows"][0][1] <= 1.5  # ratios, not percentages


def test_missing_db_is_one_line_error(tmp_path):
    import subprocess

    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "sopgraph.mcp_servers.ops_store",
            "--db",
            str(tmp_path / "none.sqlite"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no such database" in r.stderr
