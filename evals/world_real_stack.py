"""The real data stack of the triage world: a stock Prometheus over the backfilled TSDB, and
the SOP folder whose ``mcp.json`` reads it through ``prometheus-mcp-server`` from PyPI.

``PrometheusProcess`` starts ``prometheus`` on a free loopback port over a copy of the blocks
(Prometheus writes its WAL and lock beside them) and waits until it answers; ``real_sop``
copies the triage SOP with the robotics server replaced.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from sopgraph.mcp_servers.prometheus_backfill import INSTALL
from sopgraph.nodes.ports import free_port

REAL_VENV = Path(".venv-world-real")
MCP_SERVER = "prometheus-mcp-server"
PG_MCP_SERVER = "database-mcp-postgres"
PG_MAX_ROWS = 100_000  # that server's cap on a statement's rows (default 1,000)
READY_S = 60.0


class StackError(RuntimeError):
    """A real-stack part that cannot start, in one line (what, where, how to fix)."""


def _config(folder: Path) -> Path:
    cfg = folder / "prometheus.yml"
    cfg.write_text("global:\n  evaluation_interval: 1h\nscrape_configs: []\n")
    return cfg


class PrometheusProcess:
    """A ``prometheus`` over ``blocks`` on 127.0.0.1, for the life of a ``with`` block."""

    def __init__(self, blocks: Path, workdir: Path, exe: str = "prometheus"):
        self.blocks, self.workdir, self.exe = blocks, workdir, exe
        self.port = 0
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> PrometheusProcess:
        exe = shutil.which(self.exe)
        if exe is None:
            raise StackError(f"{self.exe} not found on PATH: {INSTALL}")
        if not self.blocks.is_dir():
            raise StackError(f"{self.blocks}: no TSDB blocks; run the backfill first")
        data = self.workdir / "data"
        shutil.rmtree(data, ignore_errors=True)
        shutil.copytree(self.blocks, data)
        self.port = free_port()
        log = (self.workdir / "prometheus.log").open("w")
        self.proc = subprocess.Popen(
            [
                exe,
                f"--config.file={_config(self.workdir)}",
                f"--storage.tsdb.path={data}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                # retention counts back from the newest block, not from today: keep them all
                "--storage.tsdb.retention.time=100y",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_S
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                tail = (self.workdir / "prometheus.log").read_text().strip().splitlines()[-1:]
                raise StackError(
                    f"prometheus exited ({self.proc.returncode}) at start: "
                    f"{tail[0] if tail else 'no output'}; see {self.workdir / 'prometheus.log'}"
                )
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        self.stop()
        raise StackError(f"prometheus on {self.url} not ready after {READY_S:.0f} s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def __enter__(self) -> PrometheusProcess:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def venv_script(name: str, venv: Path = REAL_VENV) -> Path:
    """A PyPI MCP server's script in the real stack's own virtual environment."""
    exe = venv.resolve() / "bin" / name
    if not exe.is_file():
        raise StackError(
            f"{exe}: {name} is not installed; run make .venv-world-real/.installed "
            "(pip install --require-hashes -r requirements/world-real.txt in its own venv)"
        )
    return exe


def mcp_server_command(venv: Path = REAL_VENV) -> Path:
    """The ``prometheus-mcp-server`` script of the real stack's own virtual environment."""
    return venv_script(MCP_SERVER, venv)


def postgres_server(dsn: str, venv: Path = REAL_VENV) -> dict[str, Any]:
    """The mcp.json entry of database-mcp-postgres on ``dsn``: read-only, its two tools named
    as the decisions' read-only tools (the server marks no readOnlyHint)."""
    return {
        "command": str(venv_script(PG_MCP_SERVER, venv)),
        "args": ["--dsn", dsn, "--max-rows", str(PG_MAX_ROWS)],
        "readOnlyTools": ["execute_sql", "search_objects"],
    }


def real_sop(
    sop_dir: Path,
    out: Path,
    prometheus_url: str,
    venv: Path = REAL_VENV,
    postgres: dict[str, str] | None = None,
) -> Path:
    """A copy of the SOP at ``out`` whose ``robotics`` server is prometheus-mcp-server on
    ``prometheus_url``, and each server of ``postgres`` (server -> DSN) database-mcp-postgres
    on its database (the other servers as they were)."""
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(sop_dir, out, ignore=shutil.ignore_patterns("__pycache__"))
    config = json.loads((sop_dir / "mcp.json").read_text())
    config["$comment"] = (
        f"The triage SOP on the real stack: robotics is Prometheus at {prometheus_url}"
    )
    config["mcpServers"]["robotics"] = {
        "command": str(mcp_server_command(venv)),
        "env": {
            "PROMETHEUS_URL": prometheus_url,
            "PROMETHEUS_DISABLE_LINKS": "true",  # a UI link per answer is noise to a tool
            "PROMETHEUS_REQUEST_TIMEOUT": "10",
        },
    }
    for server, dsn in (postgres or {}).items():
        config["mcpServers"][server] = postgres_server(dsn, venv)
    if postgres:
        config["$comment"] += f"; {', '.join(postgres)} are PostgreSQL (database-mcp-postgres)"
    (out / "mcp.json").write_text(json.dumps(config, indent=2) + "\n")
    return out
