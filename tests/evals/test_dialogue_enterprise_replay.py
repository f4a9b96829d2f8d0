"""Issue 28's live model runs, replayed from their cassettes: the judge on the dialogue SOPs'
path evaluation and the FC agent on the enterprise task set. Same answers, no model started,
no request missed (a miss fails the run).

``evals/model_results/<name>.json`` is what the command printed live on Qwen2.5-Coder-1.5B
(docs/dialogue-audit.md, docs/access-control.md); ``tests/cassettes/<name>.jsonl`` holds every
exchange.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "evals" / "model_results"
CASSETTES = ROOT / "tests" / "cassettes"
ABCD = sorted(str(p.parent.relative_to(ROOT)) for p in (ROOT / "examples/abcd").glob("*/sop.yaml"))

pytestmark = pytest.mark.slow


def _replay(name: str, argv: list[str], **env_extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOPGRAPH_")}
    env.update(SOPGRAPH_MODEL="local", SOPGRAPH_CASSETTE=str(CASSETTES / f"{name}.jsonl"),
               SOPGRAPH_CASSETTE_MODE="replay", **env_extra)  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", *argv], env=env, capture_output=True, text=True, timeout=600,
        cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def _live(name: str) -> dict | list:
    return json.loads((RESULTS / f"{name}.json").read_text())


def test_eval_paths_with_the_live_judge_replays():
    live = _live("eval_paths_judge_model")
    argv = ["sopgraph", "eval", "paths", *ABCD, "examples/internet_support", "--per-path", "1",
            "--seed", "0", "--judge", "model", "--json"]  # fmt: skip
    out = json.loads(_replay("eval_paths_judge_model", argv).stdout)
    assert out == live


def test_enterprise_fc_agent_replays():
    live = _live("enterprise_agent_fc")
    argv = ["sopgraph.evals.enterprise_tasks", "--agent", "fc", "--json"]
    out = json.loads(_replay("enterprise_agent_fc", argv, ENTERPRISE_TODAY="2026-11-26").stdout)
    strip = ("seconds",)  # wall time differs on replay; tokens are the recorded ones
    for r in (*out, *live):
        for k in strip:
            r["got"].pop(k, None)
    assert [(r["id"], r["correct"], r["got"]) for r in out] == [
        (r["id"], r["correct"], r["got"]) for r in live
    ]
