"""``make phoenix`` is a trace viewer in one step: it starts Arize Phoenix on loopback, prints its
URL and the ``sopgraph run ... --trace otlp`` command, and that command's trace shows in it.

Phoenix must already be installed (``make test`` installs it first, as in CI), so the test runs
``make phoenix`` itself and never downloads anything.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from sop_factory import make_sop

from sopgraph.evals.phoenix import OTLP_HTTP_PORT, listening, spans
from sopgraph.nodes.ports import free_port

REPO = Path(__file__).resolve().parents[2]
GATED = yaml.safe_load((Path(__file__).parent / "gated_sop.yaml").read_text())
READY = re.compile(r"^Phoenix: (http://127\.0\.0\.1:\d+) ", re.M)
COMMAND = re.compile(r"^send a run's trace: (.+)$", re.M)


def _installed() -> bool:
    """Phoenix's virtual environment is present and current, so ``make phoenix`` installs nothing."""
    if shutil.which("make") is None or not (REPO / ".venv-phoenix" / ".installed").exists():
        return False
    return subprocess.run(["make", "-q", ".venv-phoenix/.installed"], cwd=REPO).returncode == 0


@pytest.fixture
def make_phoenix(tmp_path):
    """``make phoenix`` running; its printed output so far, read by the test."""
    if not _installed():
        pytest.skip("Arize Phoenix is not installed: `make phoenix` (or `make test`) installs it")
    # The default port when free (runs then need no setting); else another, which it prints.
    port = OTLP_HTTP_PORT if not listening(OTLP_HTTP_PORT) else free_port()
    env = {**os.environ, "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(free_port()),
           "PHOENIX_WORKING_DIR": str(tmp_path / "phoenix")}  # fmt: skip
    out = tmp_path / "make.log"
    with out.open("w") as log:
        proc = subprocess.Popen(["make", "phoenix"], cwd=REPO, env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    try:
        yield proc, out, port
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen) -> None:
    """Stop make and what it started (its process group), as Ctrl-C would."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def _wait_for(pattern: re.Pattern, out: Path, proc: subprocess.Popen, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while True:
        found = pattern.search(out.read_text(errors="replace"))
        if found:
            return found.group(1)
        if proc.poll() is not None or time.monotonic() > deadline:
            pytest.fail("make phoenix printed no URL:\n" + out.read_text()[-3000:])
        time.sleep(1)


@pytest.mark.slow
def test_make_phoenix_starts_phoenix_and_a_run_traced_as_it_says_shows_there(
    make_phoenix, tmp_path
):
    proc, out, port = make_phoenix
    url = _wait_for(READY, out, proc, timeout=300)  # 20-60 s on a busy 2-core machine
    assert url == f"http://127.0.0.1:{port}"
    command = _wait_for(COMMAND, out, proc, timeout=5)
    if port == OTLP_HTTP_PORT:
        assert command == "sopgraph run SOP --input JSON --trace otlp"  # nothing to set
    sop = make_sop(tmp_path / "sop", GATED, {"check": "return Verdict(value=True, observed=3)"})

    # The printed command, as a user would run it, with the SOP and input filled in.
    filled = command.replace("SOP", shlex.quote(str(sop)), 1)
    filled = filled.replace("JSON", shlex.quote('{"type": "alarm"}'), 1)
    filled = filled.replace("sopgraph run", f"{shlex.quote(sys.executable)} -m sopgraph run", 1)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["SOPGRAPH_HOME"] = str(tmp_path / "home")
    done = subprocess.run(filled, shell=True, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "no OTLP collector" not in done.stderr

    deadline = time.monotonic() + 60
    while not (found := [s for s in spans(url) if s["name"] == "invoke_workflow gated"]):
        assert time.monotonic() < deadline, f"no run in Phoenix: {spans(url)}"
        time.sleep(1)
    (root,) = found
    assert root["span_kind"] == "CHAIN" and root["parent_id"] is None
    names = {s["name"] for s in spans(url)}
    assert {"execute_tool check", "sopgraph.action standby"} <= names

    # stopping make stops Phoenix
    _stop(proc)
    deadline = time.monotonic() + 30
    while listening(port):
        assert time.monotonic() < deadline, "Phoenix outlived make phoenix"
        time.sleep(0.5)


def _serve(*args: str) -> subprocess.CompletedProcess:
    script = REPO / "evals" / "phoenix.py"
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          timeout=60)  # fmt: skip


def test_a_taken_port_is_one_line_saying_what_to_do():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _serve("--port", str(port), "--phoenix", sys.executable)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"error: port {port} on 127.0.0.1 is taken (a collector already running?): stop it, or "
        "pass --port N and send runs with OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:N\n"
    )


def test_a_missing_phoenix_is_one_line(tmp_path):
    done = _serve("--phoenix", str(tmp_path / "phoenix"))
    assert done.returncode == 2
    assert (
        done.stderr
        == f"error: no Phoenix at {tmp_path / 'phoenix'}: pass the path of its `phoenix` script\n"
    )
