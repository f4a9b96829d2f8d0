"""The simulated fulfillment-center world: reproducible, cascading, labeled, and true to its stores."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path

import duckdb
import numpy as np
import pytest

from sopgraph.evals.fc_triage.build import SOP_DIR, build_world
from sopgraph.evals.fc_triage.labeler import Labeler
from sopgraph.evals.fc_triage.plant import parse_ts
from sopgraph.evals.fc_triage.simulator import simulate
from sopgraph.evals.fc_triage.truth import REGISTRY, Query
from sopgraph.graphs.loader import load_sop


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    """The default world, full size (3 sites x 28 days, 1,500 scenarios)."""
    return build_world(tmp_path_factory.mktemp("home"), progress=False)


def test_same_seed_same_data_and_reuse(tmp_path):
    a = build_world(tmp_path / "a", seed=5, progress=False, days=1, sites=1, scenarios=12)
    b = build_world(tmp_path / "b", seed=5, progress=False, days=1, sites=1, scenarios=12)
    c = build_world(tmp_path / "c", seed=6, progress=False, days=1, sites=1, scenarios=12)
    ha, hb, hc = (json.loads(p.manifest.read_text())["data_hash"] for p in (a, b, c))
    assert ha == hb != hc
    assert a.scenarios.read_text() == b.scenarios.read_text()
    stamp = a.robotics.stat().st_mtime_ns
    again = build_world(tmp_path / "a", seed=5, progress=False, days=1, sites=1, scenarios=12)
    assert again.robotics.stat().st_mtime_ns == stamp  # reused, not rebuilt
    build_world(tmp_path / "a", seed=9, progress=False, days=1, sites=1, scenarios=12)
    assert json.loads(a.manifest.read_text())["seed"] == 9  # a different seed rebuilds


def test_faults_cascade():
    world = simulate(seed=11, days=14, sites=1)
    fr = next(iter(world.sites.values()))
    idle = fr.robo["station_idle_pct"]
    base_idle = np.nanmedian(idle)
    blocks = [f for f in fr.faults if f.kind == "upstream_blockage"]
    assert blocks
    for f in blocks:
        assert np.nanmean(fr.conv["upstream_rate_ratio"][f.start + 2 : f.end]) < 0.5
        assert np.nanmean(idle[:, f.start + 2 : f.end]) > base_idle + 30  # robots starve
    wear = [f for f in fr.faults if f.kind == "suction_wear"]
    assert wear
    for f in wear:
        i = fr.stations.index(f.station)
        late = slice(f.end - 24, f.end)
        errs = np.nansum(fr.robo["pick_errors"][i, late]) / np.nansum(
            fr.robo["pick_attempts"][i, late]
        )
        before = slice(max(f.start - 48, 0), f.start)
        errs0 = np.nansum(fr.robo["pick_errors"][i, before]) / max(
            np.nansum(fr.robo["pick_attempts"][i, before]), 1
        )
        assert errs > errs0 + 0.02  # a worn cup raises pick errors
    jams = [f for f in fr.faults if f.kind == "sorter_jam"]
    for f in jams:
        fill = np.nanmean(fr.conv["belt_nw_fill_ratio"][f.start + 3 : f.end])
        assert fill > np.nanmedian(fr.conv["belt_nw_fill_ratio"]) + 0.2  # the belt backs up


def test_sop_shape_and_labeler_cover_every_decision_node():
    sop = load_sop(SOP_DIR)
    kinds = Counter(n.kind for n in sop.nodes.values())
    assert len(sop.decision_nodes) >= 40 and len(sop.action_nodes) >= 15
    assert kinds["observation"] and kinds["root_cause"] and kinds["constraint"]
    assert {n.id for n in sop.decision_nodes} == set(REGISTRY)
    parents: dict[str, set[str]] = {}
    for n in sop.nodes.values():
        for _, child in n.next.edges():
            parents.setdefault(child, set()).add(n.id)
    for act in sop.action_nodes:
        if act.cost == "high":
            assert act.approval == "required"
            assert parents[act.id] and all(
                sop.nodes[p].kind == "constraint" for p in parents[act.id]
            ), act.id


def test_cases_per_node_balanced_and_split_in_time(full):
    sop = load_sop(SOP_DIR)
    for node in sop.decision_nodes:
        rows = _read_jsonl(full.cases / f"{node.id}.jsonl")
        assert 150 <= len(rows) <= 200, node.id
        values = Counter(r["expected"] for r in rows)
        assert values["true"] and values["false"], (node.id, values)
        train = [parse_ts(r["timestamp"]) for r in rows if r["split"] == "train"]
        held = [parse_ts(r["timestamp"]) for r in rows if r["split"] == "eval"]
        assert train and held and max(train) <= min(held), node.id


def test_scenarios(full):
    rows = _read_jsonl(full.scenarios)
    assert len(rows) == 1500
    assert len({r["alarm_id"] for r in rows}) == 1500
    assert {r["type"] for r in rows} == set(load_sop(SOP_DIR).entry)
    train = [parse_ts(r["timestamp"]) for r in rows if r["split"] == "train"]
    held = [parse_ts(r["timestamp"]) for r in rows if r["split"] == "eval"]
    assert max(train) <= min(held)
    actions = Counter(a for r in rows for a in r["actions"])
    for costly in (
        "act_robot_standby",
        "act_downstage_dock",
        "act_staffing_change",
        "act_sorter_restart",
    ):
        assert actions[costly] > 0, costly
    assert sum(bool(r["actions"]) for r in rows) > 0.8 * len(rows)


def test_ground_truth_is_a_function_of_the_stores(full):
    """The idle observation's observed mean is what SQL over the robotics store computes."""
    con = duckdb.connect(str(full.robotics), read_only=True)
    rows = [
        r for r in _read_jsonl(full.cases / "obs_station_idle.jsonl") if r["expected"] != "no_data"
    ]
    for r in rows[:25]:
        t = datetime.fromisoformat(r["timestamp"].replace("Z", ""))
        avg = con.execute(
            "SELECT avg(value) FROM samples WHERE metric = 'station_idle_pct' AND site = ? "
            "AND station = ? AND ts > ? - INTERVAL 15 MINUTE AND ts <= ?",
            [r["site"], r["input"]["station"], t, t],
        ).fetchone()[0]
        assert avg == pytest.approx(r["observed"], abs=1e-6)
    con.close()


def test_labeler_rejects_station_node_without_station():
    lab = Labeler(simulate(seed=1, days=2, sites=1))
    with pytest.raises(ValueError, match="station"):
        lab.label(
            "obs_station_idle",
            Query("BFI4", parse_ts("2025-03-04T10:00:00Z")),
            {"idle_pct_threshold": 25},
        )


def test_cases_are_edge_stratified(full):
    """Every node: >= 150 cases, >= 30% on edges in each split, no-data in both splits if any."""
    sop = load_sop(SOP_DIR)
    for node in sop.decision_nodes:
        rows = _read_jsonl(full.cases / f"{node.id}.jsonl")
        assert len(rows) >= 150, node.id
        for split in ("train", "eval"):
            part = [r for r in rows if r["split"] == split]
            assert sum(bool(r["edges"]) for r in part) >= 0.3 * len(part), (node.id, split)
        no_data = {r["split"] for r in rows if r["expected"] == "no_data"}
        assert not no_data or no_data == {"train", "eval"}, (node.id, no_data)


def test_every_convention_flips_at_least_three_held_out_cases_per_node(full):
    from sopgraph.evals.fc_triage.mutations import MIN_FLIPS, mutation_table

    rows = mutation_table(full.root, SOP_DIR, "eval")
    assert len(rows) >= 100
    short = [(r.convention, r.node, r.flips) for r in rows if r.flips < MIN_FLIPS]
    assert short == []


def test_a_wrong_convention_changes_labels_the_expert_keeps():
    from sopgraph.evals.fc_triage.conventions import EXPERT

    lab = Labeler(simulate(seed=1, days=2, sites=1))
    wrong = lab.with_conventions(EXPERT.without("ratio_units"))
    q = Query("BFI4", parse_ts("2025-03-04T10:00:00Z"))
    p = {"upstream_flow_min_pct": 70}
    assert lab.label("obs_upstream_flow_low", q, p).value == "false"
    assert wrong.label("obs_upstream_flow_low", q, p).value == "true"  # 0.95 < 70
