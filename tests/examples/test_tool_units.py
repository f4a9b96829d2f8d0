"""Every compiled tool of the triage SOP reports ``observed`` in the unit its threshold has in
the SOP text: a percent threshold gets a percent, a threshold in days an age in days.

The check runs each active tool on labeled alarms of its node (true and false ones) and asks
two things of every verdict whose threshold the text gives a unit: that ``observed`` states a
measurement in that unit, and that the threshold separates the true verdicts' measurements
from the false ones' (a fraction 0.9 against 85%, or 250,000 seconds against 3 days, cannot).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from fc_world import fc_home, fc_world  # noqa: F401

from sopgraph.evals.fc_triage.dataset import load_cases
from sopgraph.examples import EXAMPLES
from sopgraph.graphs.executors import ToolContext
from sopgraph.graphs.loader import load_sop
from sopgraph.graphs.model import Verdict
from sopgraph.graphs.units import measured, threshold_unit, unit_problems
from sopgraph.nodes.mcp import McpPool, load_server_configs
from sopgraph.tools.params import ParamStore
from sopgraph.tools.registry import Registry

SOP_DIR = EXAMPLES / "fc_alarm_triage"
PER_VALUE = 10  # labeled alarms per node and verdict value
# The tools whose v2 reported a fraction or seconds against a threshold in % or days.
FIXED_IN_V3 = {
    "ct_cup_recently_replaced", "ct_lens_cleaned_recently", "rc_print_head_worn",
    "obs_belt_fill_high", "rc_quadrant_backed_up", "obs_starvation_sustained",
    "obs_upstream_flow_low", "rc_upstream_blockage", "rc_recirc_high",
    "rc_sorter_throughput_low", "rc_pack_out_understaffed",
}  # fmt: skip


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(
        f"units_check_{path.parent.name}_{path.stem}", path
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.run


async def _samples(home: Path, versions: dict[str, int] | None = None) -> dict[str, list]:
    """Per node: (verdict, site parameters) on PER_VALUE true and PER_VALUE false labeled alarms
    the active tool, or the version given in ``versions``."""
    sop = load_sop(SOP_DIR)
    registry, store = Registry(SOP_DIR / "tools"), ParamStore(sop, SOP_DIR)
    out: dict[str, list] = {}
    async with McpPool(load_server_configs(SOP_DIR)) as pool:
        for node in sop.decision_nodes:
            if versions is not None and node.id not in versions:
                continue
            fn = (
                _load(registry.path_of(node.id, versions[node.id]))
                if versions
                else registry.resolve(node.tool_name).fn
            )
            cases = load_cases(home / "fc_world" / "cases", node.id)
            picked = []
            for value in ("true", "false"):  # spread over the edge strata the cases come in
                group = [c for c in cases if c.expected == value]
                picked += group[:: max(1, len(group) // PER_VALUE)][:PER_VALUE]
            out[node.id] = []
            for case in picked:
                params = store.for_input(case.run_input)
                ctx = ToolContext(
                    node_id=node.id, text=sop.render_text(node, params), params=params,
                    parents={}, input=case.run_input, run_id="units", mcp=pool, node=node,
                )  # fmt: skip
                verdict = await fn(ctx.input, ctx)
                out[node.id].append((Verdict.model_validate(verdict), params))
    return out


@pytest.fixture
def world_home(fc_home, monkeypatch):  # noqa: F811
    monkeypatch.setenv("SOPGRAPH_HOME", str(fc_home))
    return fc_home


async def test_every_tool_reports_observed_in_the_unit_of_its_threshold(world_home):
    sop = load_sop(SOP_DIR)
    samples = await _samples(world_home)
    problems = [p for node_id, s in samples.items() for p in unit_problems(sop, node_id, s)]
    assert problems == []
    checked = {
        n for n, s in samples.items()
        if any(threshold_unit(sop, n, v.threshold, p, v.observed) for v, p in s if v.value != "no_data")
    }  # fmt: skip
    assert len(checked) >= 20, sorted(checked)  # the check is not vacuous
    assert FIXED_IN_V3 <= checked
    assert "ct_standby_capacity_safe" in checked  # a derived threshold, in the flow's unit
    for node_id in checked:  # both verdicts measured, so the separation test means something
        values = {
            v.value for v, p in samples[node_id]
            if measured(v.observed, threshold_unit(sop, node_id, v.threshold, p, v.observed) or "")
        }  # fmt: skip
        assert values >= {"true", "false"}, node_id


async def test_the_check_catches_the_v2_tools_that_mixed_units(world_home):
    sop = load_sop(SOP_DIR)
    samples = await _samples(world_home, versions=dict.fromkeys(FIXED_IN_V3, 2))
    caught = {n for n, s in samples.items() if unit_problems(sop, n, s)}
    assert caught == FIXED_IN_V3


async def test_eval_tools_reports_a_tool_that_mixes_units(world_home, tmp_path):
    """``sopgraph eval tools`` runs the same check: with obs_belt_fill_high v2 (fractions
    against a threshold in %) active in a copy of the SOP, the node is reported."""
    import shutil

    from sopgraph.evals.tool_eval import eval_tools, summarize

    copy = tmp_path / "sop"
    shutil.copytree(SOP_DIR, copy)
    Registry(copy / "tools").promote("obs_belt_fill_high", 2)
    nodes = ["obs_belt_fill_high", "obs_station_idle"]
    results = await eval_tools(copy, world_home / "fc_world" / "cases", "eval", nodes=nodes)
    summary = summarize(results, "eval")
    problems = {r["node"]: r["unit_problems"] for r in summary["results"]}
    assert problems["obs_station_idle"] == []
    # its observation is a bare fraction per quadrant: nothing in it is stated in %
    assert [p.split(";")[0] for p in problems["obs_belt_fill_high"]] == [
        "obs_belt_fill_high: no verdict states its measurement"
    ]
    assert summary["unit_problem_nodes"] == 1
