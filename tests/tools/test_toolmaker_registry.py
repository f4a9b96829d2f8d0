"""A record with no runnable candidate is not registered; the tool-maker commands' mistakes are
one error line (a made spec registered, promoted and reverted: ``test_toolmaker_sampling.py``)."""

from __future__ import annotations

import json

import pytest
from toolmaker_sop import NODE, TRAIN, make_toy_sop

from sopgraph.cli import main
from sopgraph.tools.registry import Registry
from sopgraph.tools.toolmaker.pipeline import register
from sopgraph.tools.toolmaker.record import MakeRecord


def test_a_record_without_a_runnable_candidate_is_not_registered(tmp_path):
    record = MakeRecord(node=NODE, config="sop", seed=0, model="m")
    with pytest.raises(Exception, match="no runnable candidate"):
        register(record, Registry(tmp_path / "tools"))


@pytest.mark.parametrize(
    "argv, message",
    [
        (["tools", "make", "{sop}", "obs_nope", "--cases", "{cases}"], "no decision node obs_nope"),
        (["tools", "make", "{sop}", NODE, "--cases", "{sop}/none"], "--cases"),
        (["tools", "make", "{sop}", NODE, "--cases", "{cases}"], "the tool-maker needs a model"),
        (
            ["tools", "make", "{sop}", "rc_other", "--cases", "{cases}"],
            "no labeled cases for rc_other",
        ),
        (["tools", "make", "{sop}", NODE, "--config", "sop+x"], "invalid choice"),
        (["tools", "make", "{sop}", NODE, "--rounds", "99", "--cases", "{cases}"], "--rounds 99"),
        (["eval", "toolmaker", "{sop}", "--configs", "sop,sop+q", "--cases", "{cases}"], "sop+q"),
        (["eval", "toolmaker", "{sop}/missing"], "no such SOP"),
        (
            [
                "eval",
                "toolmaker",
                "{sop}",
                "--cases",
                "{cases}",
                "--nodes",
                NODE,
                "--program",
                "{sop}/nope.json",
            ],
            "nope.json: no saved tool-maker program",
        ),  # fmt: skip
        (["tools", "optimize-maker", "{sop}"], "no labeled cases known for this SOP"),
        (
            ["tools", "optimize-maker", "{sop}", "--cases", "{cases}"],
            "the tool-maker needs a model",
        ),
    ],
)
def test_cli_mistakes_are_one_line_errors(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.delenv("SOPGRAPH_MODEL", raising=False)
    monkeypatch.delenv("SOPGRAPH_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)  # no ./sopgraph.toml
    sop = make_toy_sop(tmp_path / "toy_belt")
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / f"{NODE}.jsonl").write_text(
        "".join(
            json.dumps({**c.model_dump(), "node": NODE, "split": "train"}) + "\n" for c in TRAIN
        )
    )
    try:
        code = main([a.format(sop=sop, cases=cases) for a in argv])
    except SystemExit as exc:  # argparse's own errors exit, as everywhere in the CLI
        code = exc.code
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) <= 2 and err[-1].startswith("error:") and message in err[-1]


def test_a_node_named_twice_is_made_once(tmp_path):
    from sopgraph.commands.toolmaker_common import decision_nodes

    sop = make_toy_sop(tmp_path / "toy_belt")
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / f"{NODE}.jsonl").write_text(
        json.dumps({**TRAIN[0].model_dump(), "node": NODE, "split": "train"}) + "\n"
    )
    assert decision_nodes(sop, [NODE, NODE], cases) == [NODE]
