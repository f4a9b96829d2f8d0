"""The live draft of examples/service_interruption/sop.md (docs/drafting.md), replayed from its
cassette: the same draft and cost figures, no model started, no request missed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASSETTE = ROOT / "tests" / "cassettes" / "draft_service_interruption.jsonl"
RECORDED = ROOT / "tests" / "data" / "drafts" / "service_interruption.live.sop.yaml"


def test_the_live_draft_replays(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOPGRAPH_")}
    env.update(SOPGRAPH_MODEL="local", SOPGRAPH_CASSETTE=str(CASSETTE),
               SOPGRAPH_CASSETTE_MODE="replay", SOPGRAPH_HOME=str(tmp_path / "home"))  # fmt: skip
    out = tmp_path / "draft"
    proc = subprocess.run(
        [sys.executable, "-m", "sopgraph", "draft", "examples/service_interruption/sop.md",
         "-o", str(out), "--samples", "2", "--repairs", "1"],
        env=env, capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "18 failed checks, samples [18, 18], 1 repair round" in proc.stdout
    assert "6 model calls (0 failed), 7,999 prompt + 1,615 completion tokens" in proc.stdout
    assert (out / "sop.yaml").read_text() == RECORDED.read_text()
