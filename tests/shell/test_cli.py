"""The ``sopgraph`` command line as a user meets it: exit codes, one-line errors, JSON output.

Each test runs the real CLI in a subprocess (``python -m sopgraph``) with its own
``SOPGRAPH_HOME``. Only the last test starts the alarm-triage MCP servers (twice).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from fc_world import fc_home, fc_world  # noqa: F401

from sopgraph.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
TRIAGE = ROOT / "examples" / "fc_alarm_triage"
IMPORTABLE = ROOT / "examples" / "service_interruption" / "sop_agent.yaml"
GOOD_SOP = ROOT / "tests" / "data" / "good_sops" / "parallel.yaml"


def sopgraph(*args: str, home: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "SOPGRAPH_HOME": str(home)}
    env.pop("SOPGRAPH_MODEL", None)
    return subprocess.run(
        [sys.executable, "-m", "sopgraph", *map(str, args)],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout,
    )  # fmt: skip


def assert_user_error(proc: subprocess.CompletedProcess, *needles: str) -> None:
    """Exit 2, exactly one ``error:`` line on stderr, no traceback, mentioning each needle."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def test_input_that_is_a_missing_file_or_a_folder_says_so(tmp_path: Path) -> None:
    missing = tmp_path / "alarm.json"
    proc = sopgraph("run", TRIAGE, "--input", missing, home=tmp_path)
    assert_user_error(proc, str(missing), "no such file")
    assert "not JSON" not in proc.stderr  # it used to blame the path text for not being JSON
    assert_user_error(sopgraph("run", TRIAGE, "-i", tmp_path, home=tmp_path), "is a folder")
    not_json = tmp_path / "alarm.yaml"
    not_json.write_text("type: sorter_jam\n")
    assert_user_error(sopgraph("run", TRIAGE, "-i", not_json, home=tmp_path), "not JSON")
    assert_user_error(sopgraph("run", TRIAGE, "-i", "[1, 2]", home=tmp_path), "JSON object")


def test_checkpoint_that_is_a_folder_or_unreachable_is_one_line(tmp_path: Path) -> None:
    alarm = '{"type": "sorter_jam"}'
    for cmd in (["run", TRIAGE, "-i", alarm], ["bench", "triage", "--alarms", "1"]):
        proc = sopgraph(*cmd, "--checkpoint", tmp_path, home=tmp_path)
        assert_user_error(proc, "--checkpoint", "is a folder")
    with socket.socket() as sock:  # a port nobody listens on: connection refused at once
        sock.bind(("127.0.0.1", 0))
        dsn = f"postgresql://nobody@127.0.0.1:{sock.getsockname()[1]}/none"
    proc = sopgraph("run", TRIAGE, "-i", alarm, "--checkpoint", dsn, home=tmp_path)
    assert_user_error(proc, dsn, "cannot open the checkpoint store")


def test_resume_with_a_missing_checkpoint_file_does_not_create_it(tmp_path: Path) -> None:
    store = tmp_path / "elsewhere.sqlite"
    proc = sopgraph(
        "resume", TRIAGE, "--thread", "t1", "--decision", "approve", "--checkpoint", store,
        home=tmp_path,
    )  # fmt: skip
    assert_user_error(proc, str(store), "--checkpoint")
    assert not store.exists()


def test_outputs_go_into_missing_folders_and_not_onto_folders(tmp_path: Path) -> None:
    out = tmp_path / "new" / "deeper" / "sop.mmd"
    proc = sopgraph("graph", GOOD_SOP, "-o", out, home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "flowchart TD" in out.read_text()
    for fmt in ("mermaid", "png"):
        proc = sopgraph("graph", GOOD_SOP, "--format", fmt, "-o", tmp_path, home=tmp_path)
        assert_user_error(proc, "is a folder")
    yaml_out = tmp_path / "imported" / "sop.yaml"
    proc = sopgraph("import", "sopagent", IMPORTABLE, "-o", yaml_out, home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sopgraph("validate", yaml_out, home=tmp_path).returncode == 0
    assert_user_error(sopgraph("demo", "--report", tmp_path, home=tmp_path), "--report")


def test_validate_json_is_json_on_failure_too(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: [unclosed\n")
    proc = sopgraph("validate", bad, "--json", home=tmp_path)
    assert_user_error(proc, str(bad))
    report = json.loads(proc.stdout)
    assert report["ok"] is False and report["errors"][0]["file"] == str(bad)
    ok = json.loads(sopgraph("validate", TRIAGE, "--json", home=tmp_path).stdout)
    assert (ok["ok"], ok["decision_nodes"], ok["action_nodes"]) == (True, 44, 20)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["demo", "--alarms", "0"], "--alarms"),  # 0 used to triage every held-out alarm
        (["eval", "triage", "--concurrency", "0"], "--concurrency"),  # used to hang
        (["bench", "serve", "--runs", "-1"], "--runs"),  # used to be a ValueError traceback
        (["mcp", "serve", "--transport", "http", "--port", "70000"], "--port"),
        (["graph", str(GOOD_SOP), "--format", "svg"], "--format"),
        (["run"], "sop"),
        (["tools", "list", str(TRIAGE), "obs_station_idle"], "too many arguments"),
        (["tools", "list", "/no/such/sop"], "no such SOP"),
        (["tools", "promote", str(TRIAGE), "obs_station_idle"], "version"),
    ],
)
def test_command_line_mistakes_are_one_error_line(
    tmp_path: Path, args: list[str], needle: str
) -> None:
    assert_user_error(sopgraph(*args, home=tmp_path), needle)


def test_mcp_serve_on_a_taken_port_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        proc = sopgraph("mcp", "serve", "--transport", "http", "--port", port, home=tmp_path)
    assert_user_error(proc, f"--port {port}", "pick another")


def test_every_option_has_help() -> None:
    parser = build_parser()
    assert "tests call" not in parser.format_help()

    def walk(p, prog):
        for action in p._actions:
            if action.dest == "help":
                continue
            if action.choices and isinstance(action.choices, dict):  # subcommands
                for name, sub in action.choices.items():
                    yield from walk(sub, f"{prog} {name}")
            else:
                yield prog, action

    missing = [f"{prog} {a.dest}" for prog, a in walk(parser, "sopgraph") if not a.help]
    assert missing == [], missing


@pytest.mark.slow
def test_gated_run_then_resume(tmp_path: Path, fc_home: Path) -> None:  # noqa: F811
    home = tmp_path / "home"
    home.mkdir()
    (home / "fc_world").symlink_to(fc_home / "fc_world")
    scenarios = (fc_home / "fc_world" / "scenarios.jsonl").read_text().splitlines()
    gated = next(json.loads(s) for s in scenarios if "act_robot_standby" in s)
    alarm = tmp_path / "alarm.json"
    alarm.write_text(json.dumps(gated))
    store = tmp_path / "cp" / "runs.sqlite"  # a missing folder is created

    proc = sopgraph(
        "run", TRIAGE, "-i", alarm, "--thread", "t1", "--checkpoint", store, "--json", home=home
    )
    assert proc.returncode == 0, proc.stderr
    paused = json.loads(proc.stdout)
    assert paused["status"] == "interrupted"
    assert "act_robot_standby" in json.dumps(paused["interrupts"])

    proc = sopgraph(
        "resume", TRIAGE, "--thread", "t1", "--node", "act_robot_standby", "--decision",
        "approve", "--checkpoint", store, "--json", home=home,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    done = json.loads(proc.stdout)
    assert done["status"] == "done"
    assert [a["node"] for a in done["actions"]] == ["act_robot_standby"]


def test_version_and_mcp_help(tmp_path: Path) -> None:
    from importlib.metadata import version

    proc = sopgraph("--version", home=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == f"sopgraph {version('sopgraph')}"
    proc = sopgraph("mcp", "serve", "--help", home=tmp_path)
    assert proc.returncode == 0 and "{home}" not in proc.stdout and "$SOPGRAPH_HOME" in proc.stdout


def test_resume_traces_the_rest_of_the_run_in_the_same_trace(tmp_path: Path) -> None:
    import yaml
    from sop_factory import make_sop

    gated = yaml.safe_load((Path(__file__).parent / "gated_sop.yaml").read_text())
    root = make_sop(tmp_path / "sop", gated, {"check": "return Verdict(value=True)"})
    run = sopgraph("run", root, "-i", '{"type": "alarm"}', "--thread", "t1", home=tmp_path)
    assert run.returncode == 0, run.stderr
    proc = sopgraph(
        "resume", root, "--thread", "t1", "--node", "standby", "--decision", "approve",
        "--trace", "console", home=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    tree = proc.stderr.splitlines()
    assert tree[0].startswith("invoke_workflow gated status=done"), proc.stderr
    assert any(line.startswith("  sopgraph.action confirm") for line in tree), proc.stderr


def test_trace_otlp_with_no_collector_is_one_warning_line(tmp_path: Path, monkeypatch) -> None:
    """``--trace otlp`` with nothing listening at the collector's address: the run's output is
    intact and stderr holds one warning line, no exporter retry logs (which also stretched a
    2.7 s run to 9 s)."""
    from sopgraph.nodes.ports import free_port

    url = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    proc = sopgraph(
        "run", GOOD_SOP, "-i", '{"type": "station_idle"}', "--json", "--trace", "otlp",
        home=tmp_path,
    )  # fmt: skip
    assert json.loads(proc.stdout)["sop_id"] == "dock_triage", proc.stderr
    assert proc.stderr.splitlines() == [
        f"warning: no OTLP collector at {url}/v1/traces (Connection refused); traces are "
        "dropped until one listens (start one, e.g. `make phoenix` in a checkout, or "
        "set OTEL_EXPORTER_OTLP_ENDPOINT)"
    ]
