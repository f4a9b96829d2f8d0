"""A real make-and-repair run of the local model, replayed from its cassette (no model needed).

`sopgraph tools make --config sop+r` runs the test-repair loop on the toy SOP (tool-maker,
sandbox test, reflector, rewrite) with `SOPGRAPH_MODEL=local`, its HTTP exchanges answered
from the cassette recorded live from Qwen2.5-Coder-1.5B. The figures it prints must be the ones
the live run printed. Re-record (live, minutes on a CPU):
`TOOLMAKER_CASSETTE_MODE=record .venv/bin/pytest tests/tools/test_toolmaker_replay.py`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from model_env import clean_env  # noqa: F401 - the autouse fixture
from toolmaker_sop import HELD_OUT, NODE, TRAIN, make_toy_sop

from sopgraph.cli import main

TAPES = Path(__file__).resolve().parents[1] / "cassettes"
CASSETTE = TAPES / "toolmaker_toy_make.jsonl"
EXPECTED = TAPES / "toolmaker_toy_make.expected.json"
FIGURES = ("train_pass", "eval_pass", "best_round", "rounds", "tokens", "version")


def test_a_recorded_live_make_and_repair_replays_to_the_same_figures(tmp_path, monkeypatch, capsys):
    mode = os.environ.get("TOOLMAKER_CASSETTE_MODE", "replay")
    if mode == "replay" and not CASSETTE.exists():
        pytest.fail(f"{CASSETTE} is missing; record it (see this module's docstring)")
    monkeypatch.setenv("SOPGRAPH_MODEL", "local")
    monkeypatch.setenv("SOPGRAPH_CASSETTE", str(CASSETTE))
    monkeypatch.setenv("SOPGRAPH_CASSETTE_MODE", mode)
    sop = make_toy_sop(tmp_path / "toy_belt")
    cases = tmp_path / "cases"
    cases.mkdir()
    rows = [{**c.model_dump(), "node": NODE, "split": "train"} for c in TRAIN]
    rows += [{**c.model_dump(), "node": NODE, "split": "eval"} for c in HELD_OUT]
    (cases / f"{NODE}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    argv = ["tools", "make", str(sop), NODE, "--cases", str(cases), "--config", "sop+r",
            "--rounds", "1", "--json"]  # fmt: skip
    assert main(argv) == 0
    (made,) = json.loads(capsys.readouterr().out)
    figures = {k: made[k] for k in FIGURES}
    record = json.loads(Path(made["record"]).read_text())
    if mode == "record":
        EXPECTED.write_text(json.dumps(figures, indent=1) + "\n")
        return
    assert figures == json.loads(EXPECTED.read_text())
    assert record["model"] == "local" and record["config"] == "sop+r"
