"""``sopgraph run`` as a careless user meets it: inline inputs that are not objects, the input
contract in ``run SOP --help``, and the exit codes of the run outcomes (unmatched, bounded)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sop_factory import make_sop

from sopgraph.run_input import InputSpecError, read_input

ROOT = Path(__file__).resolve().parents[2]
TRIAGE = ROOT / "examples" / "fc_alarm_triage"
SERVICE = ROOT / "examples" / "service_interruption"


def sopgraph(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SOPGRAPH_HOME": str(home)}
    env.pop("SOPGRAPH_MODEL", None)
    return subprocess.run(
        [sys.executable, "-m", "sopgraph", *map(str, args)],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize("spec,says", [
    ("not json {", "--input not json {: not JSON (Expecting value at line 1 column 1)"),
    ("null", "--input null: JSON null, not a JSON object"),
    ("42", "--input 42: a JSON number, not a JSON object"),
    ('"station_idle"', 'a JSON string, not a JSON object'),
    ('{"type": "sorter_jam",}', "not JSON (Expecting property name enclosed in double quotes"),
    ("alarm.json", "--input alarm.json: no such file"),
])  # fmt: skip
def test_inline_input_is_reported_as_what_it_is(spec, says, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputSpecError) as info:
        read_input(spec)
    assert says in str(info.value) and "\n" not in str(info.value)
    if spec != "alarm.json":
        assert "no such file" not in str(info.value)


def test_cli_input_mistakes_are_one_line_exit_2(tmp_path):
    for spec, says in (("not json {", "not JSON"), ("null", "JSON null, not a JSON object")):
        proc = sopgraph("run", SERVICE, "-i", spec, home=tmp_path)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert proc.stderr.startswith("error: ") and says in proc.stderr
    # the input contract: a missing field is named before any node runs
    proc = sopgraph("run", SERVICE, "-i", "{}", "--checkpoint", "memory", home=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert 'input field \'case_id\' is required; add it, e.g. "case_id": "leaf_03"' in (proc.stderr)


def test_run_help_publishes_the_sops_input_contract(tmp_path):
    proc = sopgraph("run", TRIAGE, "--help", home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "input of fc_outbound_dock_triage" in out
    assert "station      string, required for station_idle" in out
    assert 'example: {"type": "station_idle", "site": "BFI4"' in out
    assert "3 unmatched" in out and "4 bounded" in out
    plain = sopgraph("run", "--help", home=tmp_path)
    assert plain.returncode == 0 and "`sopgraph run SOP --help` lists them" in plain.stdout


SWITCH = {
    "id": "switch",
    "entry": {"call": ["auth"]},
    "nodes": {
        "auth": {"kind": "observation", "text": "check", "next": {"when": [
            {"if": {"var": "status", "op": "eq", "value": "failed"}, "then": ["advise"]},
            {"if": {"var": "status", "op": "eq", "value": "success"}, "then": ["verify"]},
        ]}},
        "advise": {"kind": "action", "text": "advise"},
        "verify": {"kind": "action", "text": "verify"},
    },
}  # fmt: skip
LOOP = {
    "id": "loop",
    "entry": {"task": ["ask"]},
    "nodes": {
        "ask": {"kind": "observation", "text": "ask", "max_visits": 2,
                "next": {"false": ["ask"], "true": ["done"]}},
        "done": {"kind": "action", "text": "done"},
    },
}  # fmt: skip


def test_exit_codes_tell_unmatched_and_bounded_runs_from_complete_ones(tmp_path):
    switch = make_sop(
        tmp_path / "switch", SWITCH, {"auth": "return Verdict(value=True, observed=ctx.input)"}
    )
    loop = make_sop(tmp_path / "loop", LOOP, {"ask": "return Verdict(value=False)"})
    runs = {
        ("switch", "success"): (switch, '{"status": "success"}', 0, "done"),
        ("switch", "pending_2fa"): (switch, '{"status": "pending_2fa"}', 3, "unmatched"),
        ("loop", "never"): (loop, "{}", 4, "bounded"),
    }
    for name, (sop, inp, code, status) in runs.items():
        proc = sopgraph("run", sop, "-i", inp, "--checkpoint", "memory", "--json", home=tmp_path)
        assert proc.returncode == code, (name, proc.stderr)
        assert f'"status": "{status}"' in proc.stdout, name
