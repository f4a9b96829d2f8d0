"""The triage SOP on a real Prometheus (Debian's, over a backfilled 2-day world) read through
prometheus-mcp-server from PyPI, and its tables in a real PostgreSQL read through
database-mcp-postgres: verdicts identical to the simulated servers' on labeled cases, window
edges included, and one line for each way the real stack fails."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from sopgraph.evals.fc_triage.build import build_world
from sopgraph.evals.pg_cluster import PgCluster
from sopgraph.evals.tool_eval import eval_tools
from sopgraph.evals.world_real import TRIAGE_SOP, blocks_for, node_agreement, preflight
from sopgraph.evals.world_real_checks import explain, missing_metrics
from sopgraph.evals.world_real_pg import load_world_tables
from sopgraph.evals.world_real_stack import PrometheusProcess, StackError, real_sop
from sopgraph.nodes.mcp import McpError, McpPool, load_server_configs

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (shutil.which("prometheus") and shutil.which("promtool")),
        reason="Prometheus is not installed: apt-get install prometheus (make system-deps)",
    ),
]
NODES = [
    "obs_station_idle",
    "obs_idle_spread",
    "obs_site_throughput_low",
    "ct_standby_capacity_safe",
    # PostgreSQL: a counter's increase, four columns at once, a Python tool's SQL, open tickets
    "obs_sorter_jams",
    "obs_belt_fill_high",
    "ct_downstage_precondition",
    "ct_robot_ticket_open",
]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory):
    home = tmp_path_factory.mktemp("real_home")
    paths = build_world(home, progress=False, days=2, scenarios=60)
    mp = pytest.MonkeyPatch()
    mp.setenv("SOPGRAPH_HOME", str(home))  # the ops and conveyance servers read {home}
    yield paths
    mp.undo()


@pytest.fixture(scope="module")
def stack(world, tmp_path_factory: pytest.TempPathFactory):
    work = tmp_path_factory.mktemp("real_stack")
    with PrometheusProcess(blocks_for(world.robotics), work) as prom:
        with PgCluster(database="conveyance") as pg:
            dsns = load_world_tables(world, pg)
            yield real_sop(TRIAGE_SOP, work / "sop", prom.url, postgres=dsns), prom


async def test_labeled_cases_are_verdict_identical_on_real_prometheus(world, stack):
    real_dir, prom = stack
    servers = json.loads((real_dir / "mcp.json").read_text())["mcpServers"]
    assert servers["robotics"]["command"].endswith("prometheus-mcp-server")
    assert all(
        servers[s]["command"].endswith("database-mcp-postgres") for s in ("conveyance", "ops")
    )
    await preflight(real_dir, prom.url)
    sim = await eval_tools(TRIAGE_SOP, world.cases, "eval", NODES)
    real = await eval_tools(real_dir, world.cases, "eval", NODES)
    agreement = node_agreement(sim, real)
    assert (agreement["identical"], agreement["real_passed"]) == (len(NODES), len(NODES)), agreement
    assert all(r.cases >= 50 for r in real)
    # the window's edge is tested: cases on the 5-minute grid, where [15m] on Prometheus 2
    # would hold one sample more than (t-15m, t]
    rows = [
        json.loads(x) for x in (world.cases / "obs_station_idle.jsonl").read_text().splitlines()
    ]
    assert sum("aligned" in r.get("edges", []) and r["split"] == "eval" for r in rows) >= 10


async def test_a_metric_prometheus_lacks_is_one_line_naming_the_node(stack):
    real_dir, prom = stack
    async with McpPool(load_server_configs(real_dir)) as mcp:
        listed = (await mcp.call("robotics", "list_metrics", {}))["metrics"]
    assert missing_metrics(real_dir, listed, prom.url) == []
    lines = missing_metrics(real_dir, [m for m in listed if m != "units_inducted"], prom.url)
    assert len(lines) == 1 and "\n" not in lines[0]
    assert lines[0].startswith("metric 'units_inducted' (read by obs_site_throughput_low)")
    assert prom.url in lines[0] and "backfill the world again" in lines[0]


async def test_a_promql_error_is_prometheus_own_message_in_one_line(stack):
    real_dir, prom = stack
    async with McpPool(load_server_configs(real_dir)) as mcp:
        with pytest.raises(McpError) as err:
            await mcp.call(
                "robotics",
                "execute_query",
                {"query": 'avg_over_time(station_idle_pct{site="BFI4"[15m])'},
            )
    assert "400 Client Error" in str(err.value)  # what the PyPI server says
    line = explain(str(err.value), prom.url, real_dir / "mcp.json")
    assert line.startswith(f"Prometheus at {prom.url} rejected the PromQL 'avg_over_time(")
    assert "parse error" in line and "\n" not in line


async def test_prometheus_down_at_start_and_mid_run_is_one_line(world, stack, tmp_path: Path):
    real_dir, _ = stack
    with PrometheusProcess(blocks_for(world.robotics), tmp_path) as prom:
        sop = real_sop(TRIAGE_SOP, tmp_path / "sop", prom.url)
        query = {
            "query": 'count_over_time(station_idle_pct{site="BFI4"}[15m])',
            "time": "2025-03-03T12:00:00.001Z",
        }
        async with McpPool(load_server_configs(sop)) as mcp:
            assert (await mcp.call("robotics", "execute_query", query))["result"]
            prom.stop()  # mid-run
            with pytest.raises(McpError) as err:
                await mcp.call("robotics", "execute_query", query)
    line = explain(str(err.value), prom.url, sop / "mcp.json")
    assert line.startswith(f"Prometheus at {prom.url} is not answering (")
    assert "Connection refused" in line and f"{sop / 'mcp.json'}" in line and "\n" not in line
    with pytest.raises(StackError) as down:  # at start
        await preflight(sop, prom.url)
    assert str(down.value).startswith(f"Prometheus at {prom.url} is not reachable (")
    assert os.linesep not in str(down.value)


async def test_the_llm_free_tool_maker_reads_the_real_servers_catalog(world, stack, tmp_path):
    """The search's catalog comes from prometheus-mcp-server's own listing and its candidates
    run on Prometheus and PostgreSQL: the same specs found, the same held-out verdicts, as on
    the simulated servers (a PromQL node and a SQL node of the tool-maker's node set)."""
    from sopgraph.evals.world_real_toolmaker import make_on, side_by_side
    from sopgraph.tools.toolmaker.catalog import Catalog
    from sopgraph.tools.toolmaker.data_catalog import DataCatalog

    real_dir, _ = stack
    async with McpPool(load_server_configs(real_dir)) as mcp:
        data = await DataCatalog.read(await Catalog.read(mcp), ["robotics", "conveyance"])
    assert "camera_read_fail_pct" in data.metrics["robotics"]
    assert "sorter_jam_events_total" in data.tables["conveyance"]["conveyance_5m"]
    assert data.time_columns("conveyance_5m") == ["five_minute_interval"]
    nodes = ["obs_station_idle", "obs_sorter_jams"]
    rows = {
        "simulated": await make_on(TRIAGE_SOP, world.cases, nodes, [], None, tmp_path / "sim"),
        "real": await make_on(real_dir, world.cases, nodes, [], None, tmp_path / "real"),
    }
    summary = side_by_side(rows, "none", False)
    for node in nodes:
        cell = summary["nodes"][node]["llm-free"]
        assert cell["real"]["spec"] is not None, node
        assert cell["real"]["spec"] == cell["simulated"]["spec"], node
        assert cell["real"]["eval_pass"] == cell["simulated"]["eval_pass"], node
    assert summary["stacks"]["real"]["llm-free"]["makes"] == len(nodes)


async def test_postgres_down_at_start_and_mid_run_and_a_bad_statement_are_one_line(
    world, stack, tmp_path: Path
):
    url = stack[1].url
    with PgCluster(database="conveyance") as pg:
        dsns = load_world_tables(world, pg)
        sop = real_sop(TRIAGE_SOP, tmp_path / "sop", url, postgres=dsns)
        mcp_json = sop / "mcp.json"
        async with McpPool(load_server_configs(sop)) as mcp:
            with pytest.raises(McpError) as bad:
                await mcp.call("ops", "execute_sql", {"sql": "SELECT nope FROM tickets"})
            line = explain(str(bad.value), url, mcp_json)
            assert line.startswith("PostgreSQL behind the ops server rejected the statement: ")
            assert '"nope" does not exist' in line and "\n" not in line
            ok = await mcp.call("ops", "execute_sql", {"sql": "SELECT count(*) FROM tickets"})
            assert "1 rows" in ok
            pg.stop()  # mid-run
            with pytest.raises(McpError) as gone:
                await mcp.call("ops", "execute_sql", {"sql": "SELECT count(*) FROM tickets"})
    line = explain(str(gone.value), url, mcp_json)
    assert line.startswith("PostgreSQL behind the ops server is not answering ("), line
    assert f"--dsn in {mcp_json}" in line and "\n" not in line
    with pytest.raises(StackError) as down:  # at start
        await preflight(sop, url)
    assert str(down.value).startswith(f"PostgreSQL at {dsns['conveyance']} (the conveyance ")
    assert "is not reachable (" in str(down.value) and "\n" not in str(down.value)
