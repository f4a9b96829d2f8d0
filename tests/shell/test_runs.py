"""``sopgraph runs list`` and ``runs show`` (issue 27, finding 6): runs made by the real CLI
into a home folder are browsed from another folder, finished, failed and paused ones alike."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml
from sop_factory import make_sop

ROOT = Path(__file__).resolve().parents[2]
GATED = yaml.safe_load((Path(__file__).parent / "gated_sop.yaml").read_text())
CHECK = "return Verdict(value=True, observed=3.5, threshold=2, explanation='3.5 over 2')"
# a node with no tool and no model: the run ends with it unresolved
BROKEN = {"id": "broken", "entry": {"alarm": ["check"]},
          "nodes": {"check": {"kind": "observation", "text": "check", "next": {"true": ["rc"]}},
                    "rc": {"kind": "root_cause", "text": "no tool decides this"}}}  # fmt: skip
ALARM = '{"type": "alarm"}'


def sopgraph(*args: object, home: Path | None, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("SOPGRAPH_HOME", "SOPGRAPH_MODEL")}
    if home is not None:
        env["SOPGRAPH_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "sopgraph", *map(str, args)], stdin=subprocess.DEVNULL,
        capture_output=True, text=True, env=env, cwd=cwd, timeout=120,
    )  # fmt: skip


def _ok(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _three_runs(tmp_path: Path, home: Path | None, cwd: Path) -> tuple[Path, Path]:
    gated = make_sop(tmp_path / "gated sop", GATED, {"check": CHECK})
    broken = make_sop(tmp_path / "broken", BROKEN, {"check": CHECK})
    _ok(sopgraph("run", gated, "-i", ALARM, "--thread", "done1", "--approval", "approve",
                 home=home, cwd=cwd))  # fmt: skip
    proc = sopgraph("run", broken, "-i", ALARM, "--thread", "bad1", home=home, cwd=cwd)
    assert proc.returncode == 1, proc.stderr  # unresolved
    _ok(sopgraph("run", gated, "-i", ALARM, "--thread", "wait1", home=home, cwd=cwd))
    return gated, broken


def test_runs_list_shows_each_run_status_and_outcome(tmp_path: Path) -> None:
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    elsewhere.mkdir()
    gated, broken = _three_runs(tmp_path, home, cwd=ROOT)

    runs = json.loads(_ok(sopgraph("runs", "list", "--json", home=home, cwd=elsewhere)))
    by_id = {r["thread_id"]: r for r in runs}
    assert [r["thread_id"] for r in runs] == ["wait1", "bad1", "done1"]  # newest first
    assert (by_id["done1"]["sop_id"], by_id["done1"]["status"]) == ("gated", "finished")
    assert by_id["done1"]["final"] == "action confirm executed"
    assert by_id["done1"]["last_step"] == "confirm" and by_id["done1"]["steps"] == 3
    assert by_id["done1"]["sop_path"] == str(gated.resolve())
    assert (by_id["bad1"]["sop_id"], by_id["bad1"]["status"]) == ("broken", "failed")
    assert by_id["bad1"]["outcome"] == "unresolved" and "rc" in by_id["bad1"]["final"]
    assert by_id["wait1"]["status"] == "interrupted"
    assert by_id["wait1"]["final"] == "waiting: approve standby"
    assert all(r["started"] and r["updated"] for r in runs)

    text = _ok(sopgraph("runs", "list", home=home, cwd=elsewhere)).splitlines()
    assert str(home.resolve() / "checkpoints.sqlite") in text[0]
    row = next(line for line in text if line.startswith("wait1"))
    assert "gated" in row and "interrupted" in row and "waiting: approve standby" in row

    only = json.loads(_ok(sopgraph("runs", "list", "--sop", "gated", "--json", home=home,
                                   cwd=elsewhere)))  # fmt: skip
    assert [r["thread_id"] for r in only] == ["wait1", "done1"]
    newest = json.loads(_ok(sopgraph("runs", "list", "--limit", "1", "--json", home=home,
                                     cwd=elsewhere)))  # fmt: skip
    assert [r["thread_id"] for r in newest] == ["wait1"]


def test_runs_show_gives_the_trail_path_and_the_approval_waiting(tmp_path: Path) -> None:
    home = tmp_path / "home"
    gated, _ = _three_runs(tmp_path, home, cwd=ROOT)

    text = _ok(sopgraph("runs", "show", "wait1", home=home, cwd=tmp_path))
    assert text.startswith("run wait1 (gated): interrupted"), text
    check = text.splitlines()[1].split()
    assert check[:4] == ["check", "decided", "true", "tool"], text
    assert check[4:] == ["observed=3.5", "threshold=2"], text
    assert "  path: check\n" in text
    gate = json.loads(_ok(sopgraph("runs", "show", "wait1", "--json", home=home, cwd=tmp_path)))
    (pending,) = gate["result"]["interrupts"]
    hint = (
        f"sopgraph resume '{gated.resolve()}' --thread wait1 --interrupt {pending['id']} "
        "--decision approve|reject"
    )
    assert f"  waiting: standby needs approval; resume with `{hint}`" in text.splitlines()
    assert "  status: interrupted (waiting: approve standby)" in text.splitlines()

    done = json.loads(_ok(sopgraph("runs", "show", "done1", "--json", home=home, cwd=tmp_path)))
    assert done["status"] == "finished" and done["result"]["path"] == [
        "check",
        "standby",
        "confirm",
    ]
    step = done["result"]["trail"][0]
    assert (step["node"], step["verdict"], step["observed"], step["threshold"]) == (
        "check", "true", 3.5, 2)  # fmt: skip
    assert [a["node"] for a in done["result"]["actions"]] == ["standby", "confirm"]

    # answered through the hint, the run shows as finished
    _ok(sopgraph("resume", gated, "--thread", "wait1", "--interrupt", pending["id"],
                 "--decision", "reject", home=home, cwd=ROOT))  # fmt: skip
    runs = json.loads(_ok(sopgraph("runs", "list", "--json", home=home, cwd=tmp_path)))
    wait1 = next(r for r in runs if r["thread_id"] == "wait1")
    assert wait1["status"] == "finished" and wait1["final"] == "action standby rejected"

    proc = sopgraph("runs", "show", "nope", home=home, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("error: no run 'nope' in ") and "runs list" in proc.stderr


def test_runs_are_found_from_a_subfolder_without_sopgraph_home(tmp_path: Path) -> None:
    project = tmp_path / "project"
    deeper = project / "notes" / "deeper"
    deeper.mkdir(parents=True)
    gated = make_sop(project / "sop", GATED, {"check": CHECK})
    _ok(sopgraph("run", gated, "-i", ALARM, "--thread", "here", home=None, cwd=project))
    assert (project / ".sopgraph" / "checkpoints.sqlite").is_file()

    runs = json.loads(_ok(sopgraph("runs", "list", "--json", home=None, cwd=deeper)))
    assert [(r["thread_id"], r["status"]) for r in runs] == [("here", "interrupted")]
    # and a paused run is answered from there too, with no --checkpoint
    _ok(sopgraph("resume", gated, "--thread", "here", "--node", "standby", "--decision",
                 "approve", home=None, cwd=deeper))  # fmt: skip
    assert not (deeper / ".sopgraph").exists()


def test_no_runs_yet_is_said_in_one_line(tmp_path: Path) -> None:
    proc = sopgraph("runs", "list", home=tmp_path / "home", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    store = tmp_path / "home" / "checkpoints.sqlite"
    assert proc.stdout.splitlines() == [f"no runs yet: {store} does not exist"]
    assert not store.exists()
    assert json.loads(_ok(sopgraph("runs", "list", "--json", home=tmp_path / "home",
                                   cwd=tmp_path))) == []  # fmt: skip
