"""The live draft of examples/service_interruption/sop.md (docs/drafting.md), replayed from its
cassette: no model started, no request missed. With ``--no-structural`` it is the recorded
run (the model's drafts alone, 15 failed checks, 3 calls); with the structural candidate (made
without the model) beside the same recorded samples, the structural one passes every check and
is kept, so the repair round and its call are not made."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASSETTE = ROOT / "tests" / "cassettes" / "draft_service_interruption.jsonl"
RECORDED = ROOT / "tests" / "data" / "drafts" / "service_interruption.live.sop.yaml"
STRUCTURAL = ROOT / "tests" / "data" / "drafts" / "service_interruption.structural.sop.yaml"


def _replay(tmp_path: Path, *options: str) -> tuple[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOPGRAPH_")}
    env.update(SOPGRAPH_MODEL="local", SOPGRAPH_CASSETTE=str(CASSETTE),
               SOPGRAPH_CASSETTE_MODE="replay", SOPGRAPH_HOME=str(tmp_path / "home"))  # fmt: skip
    out = tmp_path / "draft"
    proc = subprocess.run(
        [sys.executable, "-m", "sopgraph", "draft", "examples/service_interruption/sop.md",
         "-o", str(out), "--samples", "2", "--repairs", "1", *options],
        env=env, capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, (out / "sop.yaml").read_text()


def test_the_live_draft_replays(tmp_path):
    printed, sop = _replay(tmp_path, "--no-structural")
    assert (
        "15 failed checks, samples [15, 15], structural -1, chosen sample 1, 1 repair round"
        in printed
    )
    assert "3 model calls (0 failed), 4,623 prompt + 1,499 completion tokens" in printed
    assert sop == RECORDED.read_text()


def test_beside_the_recorded_samples_the_structural_candidate_is_kept(tmp_path):
    printed, sop = _replay(tmp_path)
    assert (
        "0 failed checks, samples [15, 15], structural 0, chosen structural, 0 repair rounds"
        in printed
    )
    assert "2 model calls (0 failed), 2,456 prompt + 1,007 completion tokens" in printed
    assert sop == STRUCTURAL.read_text()
