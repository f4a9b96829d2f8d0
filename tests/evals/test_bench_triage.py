"""``bench triage`` as a function: every figure present, the lower bound doing the same calls."""

from __future__ import annotations

import math

import pytest
from fc_world import fc_home, fc_world  # noqa: F401

from sopgraph.evals.bench_triage import (
    bench_triage,
    check_targets,
    plain_traverse,
    summarize_runs,
)
from sopgraph.evals.fc_triage.dataset import load_scenarios
from sopgraph.examples import EXAMPLES

SOP = EXAMPLES / "fc_alarm_triage"


@pytest.fixture
def scenarios(fc_world, monkeypatch):  # noqa: F811
    monkeypatch.setenv("SOPGRAPH_HOME", str(fc_world.root.parent))
    return load_scenarios(fc_world.scenarios)[:12]


@pytest.mark.slow
async def test_figures_side_by_side(scenarios):
    out = await bench_triage(SOP, scenarios, concurrency=4, workers=1)
    assert out["alarms"] == 12 and out["llm_tokens_per_alarm"] == 0
    # the floor calls the same tools with the same arguments: as many MCP calls per alarm
    assert out["mcp_calls_per_alarm"] > 0
    assert out["mcp_calls_per_alarm"] == out["lower_bound_mcp_calls_per_alarm"]
    cpu = out["cpu_ms_per_alarm"]
    assert set(cpu["servers"]) == {"robotics", "conveyance", "ops"}
    assert cpu["main"] > 0 and math.isclose(cpu["total"], cpu["main"] + cpu["servers_total"])
    assert out["overhead_ratio_cpu"] > 0
    assert out["overhead_ratio_paired"] > 0 and out["overhead_ratio_mean"] > 0
    assert 1 <= out["nodes_per_alarm"]["p50"] <= out["nodes_per_alarm"]["p99"]
    assert out["ms_per_node"]["p99_over_p50"] >= 1 and out["lower_bound_p99_over_p50"] >= 1
    assert out["durable"]["alarms_per_s"] > 0 and out["durable"]["vs_memory"] > 0
    assert out["durable"]["durability"] == "node journal, a checkpoint per invocation"
    assert set(out["mcp_client"]) == {"lean", "sdk"}
    assert set(out["workers_alarms_per_s"]) == {"1"}
    assert out["machine"]["event_loop"] == "asyncio"  # pytest-asyncio's loop; the CLI runs uvloop
    assert out["machine"]["cpus"] >= 1
    targets = out["targets"]  # each target checked on this run's own figures
    assert targets["overhead_ratio"]["value"] == out["overhead_ratio"]
    assert targets["durable_vs_memory"]["value"] == out["durable"]["vs_memory"]
    assert targets["all_met"] == all(t["met"] for k, t in targets.items() if k != "all_met")


def _figures(overhead: float, tail: float, durable: float | None) -> dict:
    return {
        "p50_ms": 7.0,
        "overhead_ratio": overhead,
        "p99_over_p50": tail,
        "durable": {"vs_memory": durable, "alarms_per_s": 150.0},
    }


def test_targets_are_checked_against_their_limits():
    met = check_targets(_figures(3.0, 4.0, 0.80))  # the limits themselves are met
    assert met["all_met"] and met["overhead_ratio"] == {
        "limit": "<= 3.0",
        "value": 3.0,
        "met": True,
    }
    missed = check_targets(_figures(3.01, 3.2, 0.95))
    assert not missed["overhead_ratio"]["met"] and missed["p99_over_p50"]["met"]
    assert not missed["all_met"]
    assert not check_targets(_figures(2.0, 4.2, 0.9))["p99_over_p50"]["met"]
    low = check_targets(_figures(2.0, 3.0, 0.79))["durable_vs_memory"]
    assert low == {"limit": ">= 0.8", "value": 0.79, "met": False}
    assert not check_targets(_figures(2.0, 3.0, None))["durable_vs_memory"]["met"]  # not measured


def test_repeated_runs_report_spread_and_how_often_each_target_was_met():
    runs = [_figures(2.9, 3.5, 0.85), _figures(3.2, 3.9, 0.82), _figures(2.8, 4.3, 0.70)]
    for r in runs:
        r["targets"] = check_targets(r)
    summary = summarize_runs(runs)
    assert summary["runs"] == 3
    assert summary["spread"]["overhead_ratio"] == {"min": 2.8, "median": 2.9, "max": 3.2}
    assert summary["spread"]["durable_vs_memory"]["median"] == 0.82
    assert summary["targets_met_in_runs"] == {
        "overhead_ratio": 2,
        "p99_over_p50": 2,
        "durable_vs_memory": 2,
        "all_met": 1,
    }


async def test_plain_traverse_walks_the_path_the_graph_takes(scenarios):
    from sopgraph.evals.in_process_mcp import InProcessMcp
    from sopgraph.runtime.runner import Session
    from sopgraph.runtime.services import Services

    async with Session(SOP, checkpoint="memory", approval="approve") as session:
        floor = Services(**{**session.services.__dict__, "mcp": InProcessMcp(SOP), "log": None})
        for sc in scenarios:
            result = await session.run(sc.input)
            assert sorted(await plain_traverse(floor, sc.input)) == sorted(result.path)
