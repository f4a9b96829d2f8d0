"""The made graph's live run on our own test domain, replayed: ``sopgraph bench sopbench
tests/data/sopbench/shipment_hold --agent sopgraph`` (no hand-written graph there, so the rule
tool-maker makes one label-free on the local model, then the compiled graph runs every task
with no model). ``evals/model_results/sopbench_shipment_hold.json`` key ``sopgraph-made`` is
what the live run printed; ``tests/cassettes/sopbench_made_shipment_hold.jsonl`` holds its
exchanges (each sample and each repair). The replay must make the same choice and give the
same answers, and start no model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIVE = ROOT / "evals" / "model_results" / "sopbench_shipment_hold.json"
CASSETTE = ROOT / "tests" / "cassettes" / "sopbench_made_shipment_hold.jsonl"
DOMAIN = ROOT / "tests" / "data" / "sopbench" / "shipment_hold"

pytestmark = pytest.mark.slow


def test_the_live_made_graph_replays_to_its_published_figures(tmp_path):
    live = json.loads(LIVE.read_text())["sopgraph-made"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOPGRAPH_")}
    env.update(SOPGRAPH_MODEL="local", SOPGRAPH_CASSETTE=str(CASSETTE),
               SOPGRAPH_CASSETTE_MODE="replay", SOPGRAPH_HOME=str(tmp_path))  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "sopgraph", "bench", "sopbench", str(DOMAIN), "--agent",
         "sopgraph", "--json"],
        env=env, capture_output=True, text=True, timeout=600, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "no recorded response" not in proc.stderr
    (run,) = json.loads(proc.stdout)["runs"]
    assert run["summary"] == live["summary"] | {
        "seconds_per_task": run["summary"]["seconds_per_task"]
    }
    assert run["majority_tsr"] == live["majority_tsr"]
    made = json.loads(
        next((tmp_path / "sopbench" / "shipment_hold").glob("made-*/made.json")).read_text()
    )
    for key in ("chosen", "reach", "agreement", "usable", "refused", "repaired", "tokens", "calls"):
        assert made[key] == live["made"][key], key
    (records,) = (tmp_path / "sopbench" / "shipment_hold").glob("sopgraph-made-*/records.jsonl")
    answers = [json.loads(line)["answer"] for line in records.read_text().splitlines()]
    assert answers == live["answers"]
    # the cost line a user reads, with the kept sample and its reach
    assert (
        f"rule sample {live['made']['chosen']} kept, {live['made']['reach']} answers reached"
        in proc.stderr
    )
