"""The live tool-maker run on both stacks (``evals/model_results/world_real_toolmaker.json``),
replayed from its cassette for one PromQL node and one SQL node: the same specs chosen on the
simulated servers and on real Prometheus and PostgreSQL, the same held-out passes. The rest of
the run's 14 nodes replay with ``--nodes`` left out (about 25 minutes of sampling replayed)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fc_world import fc_home, fc_world  # noqa: F401
from model_env import clean_env  # noqa: F401 - the autouse fixture

ROOT = Path(__file__).resolve().parents[2]
TAPE = ROOT / "tests" / "cassettes" / "world_real_toolmaker.jsonl"
RESULT = ROOT / "evals" / "model_results" / "world_real_toolmaker.json"
NODES = ["obs_station_idle", "obs_sorter_jams"]  # a gauge's window mean; a counter in SQL

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (shutil.which("prometheus") and shutil.which("promtool")),
        reason="Prometheus is not installed: apt-get install prometheus (make system-deps)",
    ),
]


def test_the_live_run_on_both_stacks_replays_to_its_published_specs(
    fc_home,  # noqa: F811 - the fixture imported above
    monkeypatch,
    capsys,
):
    from sopgraph.evals.world_real_toolmaker import main

    live = json.loads(RESULT.read_text())
    assert live["live"] is True
    monkeypatch.chdir(ROOT)  # where make put .venv-world-real (clean_env left us elsewhere)
    monkeypatch.setenv("SOPGRAPH_HOME", str(fc_home))
    monkeypatch.setenv("SOPGRAPH_MODEL", "local")
    monkeypatch.setenv("SOPGRAPH_CASSETTE", str(TAPE))
    monkeypatch.setenv("SOPGRAPH_CASSETTE_MODE", "replay")
    assert main(["--configs", "sop+d+r", "--nodes", ",".join(NODES), "--json"]) == 0
    replayed = json.loads(capsys.readouterr().out)
    assert replayed["live"] is False
    for node in NODES:
        assert replayed["nodes"][node] == live["nodes"][node], node
        made = replayed["nodes"][node]["sop+d+r +enum"]
        assert made["real"]["spec"] == made["simulated"]["spec"] and made["real"]["passed"]
