"""Issue 27, finding 10's small ones, through the real CLI: an ungated action says so in words,
the resume hint names the SOP's real path, and ``--approval ask`` asks at a terminal (y/n on
stdin) and, without one, pauses with one line saying how to resume."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import yaml
from sop_factory import make_sop

ROOT = Path(__file__).resolve().parents[2]
GATED = yaml.safe_load((Path(__file__).parent / "gated_sop.yaml").read_text())
ALARM = '{"type": "alarm"}'


def _sop(tmp_path: Path) -> Path:
    return make_sop(tmp_path / "my sop", GATED, {"check": "return Verdict(value=True)"})


def _env(home: Path) -> dict[str, str]:
    env = {**os.environ, "SOPGRAPH_HOME": str(home)}
    env.pop("SOPGRAPH_MODEL", None)
    return env


def sopgraph(*args: object, home: Path) -> subprocess.CompletedProcess:
    """The CLI with stdin not a terminal (as in a pipe, a script or CI)."""
    return subprocess.run(
        [sys.executable, "-m", "sopgraph", *map(str, args)], stdin=subprocess.DEVNULL,
        capture_output=True, text=True, env=_env(home), cwd=ROOT, timeout=120,
    )  # fmt: skip


def at_a_terminal(*args: object, home: Path, answers: list[str]) -> tuple[int, str, str]:
    """The CLI with stdin a terminal (a pty): each answer is typed once the prompt asks."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "sopgraph", *map(str, args)], stdin=slave,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(home), cwd=ROOT,
    )  # fmt: skip
    os.close(slave)
    asked = b""
    try:
        for answer in answers:
            asked = _wait_for_prompt(proc, asked)
            os.write(master, (answer + "\n").encode())
        out, err = proc.communicate(timeout=120)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, out.decode(), (asked + err).decode()


def _wait_for_prompt(proc: subprocess.Popen, seen: bytes, timeout: float = 120) -> bytes:
    """Stderr so far (``seen`` and more), once the CLI has asked one question more (``[y/n]``)."""
    end, fd, asked = time.monotonic() + timeout, proc.stderr.fileno(), seen.count(b"[y/n]")
    while seen.count(b"[y/n]") == asked:
        assert time.monotonic() < end and proc.poll() is None, seen.decode()
        if select.select([fd], [], [], 0.5)[0]:
            seen += os.read(fd, 4096)
    return seen


def test_an_ungated_action_says_no_approval_was_needed(tmp_path: Path) -> None:
    root = _sop(tmp_path)
    proc = sopgraph("run", root, "-i", ALARM, "--approval", "approve", home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "by not gated" not in proc.stdout
    assert "action confirm: executed, not gated (no approval needed)" in proc.stdout
    assert "action standby: executed, approved by the approve policy" in proc.stdout


def test_without_a_terminal_ask_pauses_and_the_hint_names_the_sop_path(tmp_path: Path) -> None:
    root = _sop(tmp_path)
    proc = sopgraph("run", root, "-i", ALARM, "--thread", "t1", home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "<sop>" not in proc.stdout + proc.stderr
    gate = re.search(r"--interrupt ([0-9a-f]{32}) ", proc.stdout)[1]
    hint = f"sopgraph resume '{root}' --thread t1 --interrupt {gate} --decision approve|reject"
    assert f"waiting: standby needs approval; resume with `{hint}`" in proc.stdout
    assert proc.stderr.splitlines() == [
        "paused: standby needs approval and stdin is not a terminal, so nothing was asked;"
        f" answer with `{hint}` (or pass --approval approve|reject)"
    ]
    # the hint works as printed
    # an answer that names no gate is refused in one line that names the gate waiting
    unbound = sopgraph("resume", root, "--thread", "t1", "--decision", "approve", home=tmp_path)
    assert unbound.returncode == 2 and unbound.stderr.count("\n") == 1, unbound.stderr
    assert "name the gated action" in unbound.stderr and gate in unbound.stderr
    resume = ["resume", root, "--thread", "t1", "--interrupt", gate, "--decision", "approve"]
    proc = sopgraph(*resume, home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "run t1 (gated): done" in proc.stdout


def test_at_a_terminal_ask_asks_and_the_answer_decides(tmp_path: Path) -> None:
    root = _sop(tmp_path)
    rc, out, err = at_a_terminal(
        "run", root, "-i", ALARM, "--thread", "yes", "--json", home=tmp_path, answers=["y"]
    )
    assert rc == 0, err
    assert "approve gated action standby" in err and "cost high" in err
    done = json.loads(out)
    assert done["status"] == "done", out
    standby, confirm = done["actions"]
    assert (standby["node"], standby["approved"], standby["by"]) == ("standby", True, "human")
    assert standby["approver"].startswith("cli user ")
    assert confirm["node"] == "confirm"

    rc, out, err = at_a_terminal(
        "run", root, "-i", ALARM, "--thread", "no", home=tmp_path, answers=["maybe", "n"]
    )
    assert rc == 0, err
    assert "answer y or n" in err  # an answer that is neither is asked again
    assert "action standby: rejected, rejected by cli user " in out
    assert "waiting:" not in out
