"""A tool's own code that returns lone surrogates (text no UTF-8 encoder takes) does not crash
``sopgraph run`` (issue 53, finding 2): where its output enters the run, each lone surrogate
becomes U+FFFD, so the run is checkpointed, logged and printed like any other."""

from __future__ import annotations

import json

import pytest
from sop_factory import make_sop

from sopgraph.cli import main

SOP = {"id": "surrogates", "entry": {"alarm": ["check"]},
       "nodes": {"check": {"kind": "observation", "text": "check", "next": {"true": ["log"]}},
                 "log": {"kind": "action", "text": "log it"}}}  # fmt: skip
# nested, as a key, in the threshold and the explanation: every text field of a Verdict
RETURNS = ("return Verdict(value=True, observed={'k\\ud800': ['x\\udfffy']}, "
           "threshold='t\\udc00', explanation='why \\ud800')")  # fmt: skip
RAISES = "raise ValueError('bad \\ud800 data')"


def _cli(capsys, *argv: object) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, err
    return rc, out, err


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SOPGRAPH_MODEL", raising=False)


@pytest.mark.parametrize("as_json", [False, True])
def test_a_verdict_with_lone_surrogates_runs_to_the_end(tmp_path, capsys, as_json):
    sop = make_sop(tmp_path / "sop", SOP, {"check": RETURNS})
    db = tmp_path / "runs.db"
    rc, out, err = _cli(capsys, "run", sop, "-i", '{"type": "alarm"}', "--thread", "t1",
                        "--checkpoint", db, *(["--json"] if as_json else []))  # fmt: skip
    assert (rc, err) == (0, "")
    if as_json:
        check = json.loads(out)["verdicts"]["check"]
        assert check["observed"] == {"k\ufffd": ["x\ufffdy"]}
        assert (check["threshold"], check["explanation"]) == ("t\ufffd", "why \ufffd")
    else:
        assert out.startswith("run t1 (surrogates): done")
        assert "x\ufffdy" in out
    rc, out, _ = _cli(capsys, "runs", "show", "t1", "--checkpoint", db, "--json")
    assert rc == 0 and json.loads(out)["result"]["verdicts"]["check"]["threshold"] == "t\ufffd"


def test_a_tool_error_with_a_lone_surrogate_leaves_the_node_unresolved(tmp_path, capsys):
    sop = make_sop(tmp_path / "sop", SOP, {"check": RAISES})
    rc, out, err = _cli(capsys, "run", sop, "-i", '{"type": "alarm"}', "--thread", "t2",
                        "--checkpoint", tmp_path / "runs.db")  # fmt: skip
    assert rc == 1 and err == ""  # unresolved: the run's own exit code, not a crash
    assert out.startswith("run t2 (surrogates): unresolved")
    assert "tool: ValueError: bad \ufffd data" in out
