"""Start the LangGraph server (``langgraph dev``) offline on loopback, for tests and benchmarks.

The server serves the repository's ``langgraph.json`` itself (``--config``), but starts in a
scratch folder: it writes its state, ``.langgraph_api/``, where it starts. The graphs import
as modules of the installed project, so the config's ``"."`` dependency needs no rewriting.
A config that declares ``auth`` (the repository's does: bearer tokens, see
``mcp_servers/langgraph_auth.py``) is given a scratch tokens file, one token per identity of
``identities``, unless ``env`` names one; ``client(identity)`` sends that identity's token.

Example:
    >>> with LangGraphDev() as server:
    ...     client = server.client()
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from sopgraph.mcp_servers.server_auth import TOKENS_ENV
from sopgraph.nodes.ports import free_port

REPO = Path(__file__).resolve().parent.parent
CONFIG = REPO / "langgraph.json"
# Offline: no usage analytics, no version check against PyPI.
OFFLINE_ENV = {"LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "true"}


class ServerError(RuntimeError):
    """The server could not be started; ``str`` says why, with the end of its log."""


def langgraph_bin() -> Path:
    exe = Path(sys.executable).parent / "langgraph"
    if not exe.exists():
        found = shutil.which("langgraph")
        if not found:
            raise ServerError("langgraph-cli is not installed: pip install 'langgraph-cli[inmem]'")
        exe = Path(found)
    return exe


def dev_command(port: int, config: Path, jobs: int = 10) -> list[str]:
    """The ``langgraph dev`` command line: loopback, no browser, no reloader.

    ``--allow-blocking``: compiled tools and the invocation log do short synchronous file and
    SQLite I/O, which the dev server would otherwise turn into errors.
    """
    return [
        str(langgraph_bin()), "dev", "--host", "127.0.0.1", "--port", str(port),
        "--no-browser", "--no-reload", "--allow-blocking",
        "--n-jobs-per-worker", str(jobs), "--config", str(config),
    ]  # fmt: skip


class LangGraphDev:
    """A ``langgraph dev`` process serving ``config`` (default: the repository's langgraph.json).

    ``config`` is a path to a config file, or a config dict written into ``workdir``; the
    server starts in ``workdir`` (default a temporary folder, removed on stop). ``jobs`` is how
    many runs the server executes at once (``langgraph dev`` defaults to 1). When the config
    declares ``auth`` and ``env`` names no tokens file, each of ``identities`` gets a token
    (``tokens``), written to ``workdir/tokens``.
    """

    def __init__(
        self,
        config: Path | dict[str, Any] | None = None,
        *,
        workdir: Path | None = None,
        jobs: int = 10,
        env: dict[str, str] | None = None,
        timeout: float = 120.0,
        identities: tuple[str, ...] = ("langgraph-dev",),
    ):
        self.config = CONFIG if config is None else config
        self.workdir = workdir
        self.jobs = jobs
        self.env = env or {}
        self.timeout = timeout
        self.identities = identities
        self.tokens: dict[str, str] = {}  # identity -> bearer token, when written here
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self._tmp: str | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return Path(self.workdir) / "server.log"

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def start(self) -> LangGraphDev:
        if self.workdir is None:
            self._tmp = tempfile.mkdtemp(prefix="sopgraph-langgraph-")
            self.workdir = Path(self._tmp)
        self.workdir.mkdir(parents=True, exist_ok=True)
        if isinstance(self.config, dict):
            config_path = self.workdir / "langgraph.json"
            config_path.write_text(json.dumps(self.config, indent=2))
        else:
            config_path = Path(self.config).resolve()
        self.port = free_port()
        env = {**os.environ, **OFFLINE_ENV, **self.env}
        if "auth" in json.loads(config_path.read_text()) and TOKENS_ENV not in self.env:
            env[TOKENS_ENV] = str(self._write_tokens())
        with open(self.log_path, "wb") as log:
            # A session of its own, so stop() reaches every process the CLI starts.
            self.proc = subprocess.Popen(
                dev_command(self.port, config_path, self.jobs),
                cwd=self.workdir,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self._wait_ready()
        return self

    def _write_tokens(self) -> Path:
        self.tokens = {who: secrets.token_urlsafe(32) for who in self.identities}
        path = Path(self.workdir) / "tokens"
        path.touch(mode=0o600)
        path.write_text("".join(f"{who} {token}\n" for who, token in self.tokens.items()))
        return path

    def headers(self, identity: str | None = None) -> dict[str, str]:
        """The ``Authorization`` header of ``identity`` (default the first), if it has a token."""
        token = self.tokens.get(identity or next(iter(self.identities), ""))
        return {"Authorization": f"Bearer {token}"} if token else {}

    def client(self, identity: str | None = None) -> Any:
        """A langgraph-sdk client of this server, sending ``identity``'s token."""
        from langgraph_sdk import get_client

        return get_client(url=self.url, headers=self.headers(identity))

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.stop()
                raise ServerError(
                    f"langgraph dev exited ({self.proc.returncode}):\n{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(f"{self.url}/ok", timeout=2) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        tail = self.log_tail()
        self.stop()
        raise ServerError(f"langgraph dev not ready after {self.timeout:.0f}s:\n{tail}")

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    os.killpg(self.proc.pid, signal.SIGTERM)
                    self.proc.wait(timeout=15)
                except (subprocess.TimeoutExpired, ProcessLookupError):
                    pass
            try:  # whatever is left of its group, such as MCP servers the graphs started
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> LangGraphDev:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
