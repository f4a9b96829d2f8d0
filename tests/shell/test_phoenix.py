"""A run paused at a gated action and resumed by a second command reaches a real trace backend
(Arize Phoenix over OTLP/HTTP) as one trace, read back from Phoenix's REST API."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from sop_factory import make_sop

from sopgraph.nodes.models._local_llm import free_port

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
GATED = yaml.safe_load((Path(__file__).parent / "gated_sop.yaml").read_text())


def _phoenix() -> str | None:
    """``phoenix`` from SOPGRAPH_PHOENIX, PATH, or ``make phoenix``'s own virtual environment."""
    for candidate in (
        os.environ.get("SOPGRAPH_PHOENIX"),
        shutil.which("phoenix"),
        str(REPO / ".venv-phoenix" / "bin" / "phoenix"),
    ):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as reply:
        return json.loads(reply.read())


@pytest.fixture
def phoenix(tmp_path):
    binary = _phoenix()
    if binary is None:
        pytest.skip("Arize Phoenix is not installed: `make phoenix` (or set SOPGRAPH_PHOENIX)")
    port, grpc = free_port(), free_port()
    env = {**os.environ, "PHOENIX_WORKING_DIR": str(tmp_path / "phoenix"),
           "PHOENIX_HOST": "127.0.0.1", "PHOENIX_PORT": str(port),
           "PHOENIX_GRPC_PORT": str(grpc), "PHOENIX_TELEMETRY_ENABLED": "false"}  # fmt: skip
    log = (tmp_path / "phoenix.log").open("w")
    proc = subprocess.Popen(
        [binary, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240  # it starts in 20-60 s on a busy 2-core machine
        while True:
            try:
                urllib.request.urlopen(base + "/healthz", timeout=2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(
                        "phoenix did not start: " + (tmp_path / "phoenix.log").read_text()[-2000:]
                    )
                time.sleep(1)
        yield base
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


def _spans(base: str, want: int, timeout: float = 60) -> list[dict]:
    deadline = time.monotonic() + timeout
    while True:
        spans = _get(base + "/v1/projects/default/spans?limit=200")["data"]
        if len(spans) >= want or time.monotonic() > deadline:
            return spans
        time.sleep(1)


def test_run_and_resume_arrive_as_one_trace(phoenix, tmp_path):
    root = make_sop(tmp_path / "sop", GATED, {"check": "return Verdict(value=True, observed=3)"})
    env = {**os.environ, "SOPGRAPH_HOME": str(tmp_path / "home"),
           "OTEL_EXPORTER_OTLP_ENDPOINT": phoenix, "OTEL_SERVICE_NAME": "sopgraph-test"}  # fmt: skip
    for var in ("OTEL_TRACES_EXPORTER", "OTEL_SDK_DISABLED", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        env.pop(var, None)
    cli = [sys.executable, "-m", "sopgraph"]
    for args in (
        ["run", str(root), "--input", '{"type": "alarm"}', "--thread", "t1"],
        ["resume", str(root), "--thread", "t1", "--node", "standby", "--decision", "approve"],
    ):
        done = subprocess.run(cli + args + ["--trace", "otlp"], env=env, capture_output=True,
                              text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr
    # start: root, check, the paused standby; resume: root, standby, confirm
    spans = _spans(phoenix, want=6)
    by_name: dict[str, list[dict]] = {}
    for s in spans:
        by_name.setdefault(s["name"], []).append(s)
    assert {s["context"]["trace_id"] for s in spans} == {spans[0]["context"]["trace_id"]}
    roots = sorted(by_name["invoke_workflow gated"], key=lambda s: s["start_time"])
    start, resume = roots
    assert start["parent_id"] is None
    assert resume["parent_id"] == start["context"]["span_id"]
    assert [r["attributes"]["sopgraph.invocation"] for r in roots] == ["start", "resume"]
    assert all(r["span_kind"] == "CHAIN" for r in roots)
    assert json.loads(start["attributes"]["input.value"]) == {"type": "alarm"}
    assert json.loads(start["attributes"]["output.value"])["status"] == "interrupted"
    assert json.loads(resume["attributes"]["output.value"]) == {
        "status": "done",
        "path": ["check", "standby", "confirm"],
    }
    assert by_name["execute_tool check"][0]["span_kind"] == "TOOL"
    standby = {s["parent_id"]: s for s in by_name["sopgraph.action standby"]}
    assert standby[start["context"]["span_id"]]["attributes"]["sopgraph.interrupted"] is True
    approved = standby[resume["context"]["span_id"]]["attributes"]
    assert approved["sopgraph.action.status"] == "executed"
    assert approved["sopgraph.action.by"] == "human"
    assert by_name["sopgraph.action confirm"][0]["parent_id"] == resume["context"]["span_id"]
