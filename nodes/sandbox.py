"""Run LLM-generated Python in a separate, jailed process and return what it did.

The CodeAct sub-agent's code never runs in the main process: it runs in a fresh `python -I`
child with resource limits, no network, its own temporary directory, an unprivileged uid,
an import allow-list and only the node's allowed MCP tools, proxied by the host.

Example:
    >>> async def execute_query(args):
    ...     return [{"station": "A", "idle_pct": 31.5}]
    >>> result = await run_code(
    ...     "rows = execute_query(sql='select 1')\\nprint(rows[0]['idle_pct'])",
    ...     tools={"execute_query": execute_query},
    ... )
    >>> result.ok, result.stdout
    (True, '31.5\\n')
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from sopgraph.nodes.sandbox_jail import Jail, choose_interpreter

ToolFn = Callable[[dict], Awaitable[Any]]  # a plain function returning the result works too

DEFAULT_ALLOWED_IMPORTS = (
    "math", "statistics", "json", "datetime", "re", "collections", "itertools", "functools",
    "decimal", "fractions", "time", "typing", "dataclasses", "heapq", "bisect", "random",
    "string", "operator", "copy", "textwrap", "enum", "numbers", "calendar", "zoneinfo",
)  # fmt: skip
# Modules whose first load, by any route, stops the program (they are never needed).
DENIED_MODULES = (
    "ctypes", "_ctypes", "socket", "_socket", "ssl", "_ssl", "subprocess", "_posixsubprocess",
    "multiprocessing", "_multiprocessing", "pty", "fcntl", "mmap", "gc", "resource", "pwd",
    "grp", "termios", "asyncio", "selectors", "select", "urllib", "http", "ftplib", "smtplib",
    "importlib", "runpy", "pickle", "_pickle", "marshal", "shutil", "tempfile", "threading",
    "_thread", "concurrent", "_xxsubinterpreters", "faulthandler", "tracemalloc", "code",
)  # fmt: skip
TRUNCATION_MARKER = "\n[... output truncated: {dropped} more bytes not shown ...]\n"
_RUNNER = (Path(__file__).parent / "sandbox_runner.py").read_text()
# Essential layers when we are root; without them a run is refused rather than weakened.
_REQUIRED_AS_ROOT = {"rlimits", "uid", "tmp cwd"}


class SandboxUnavailable(RuntimeError):
    """The OS refused an essential isolation layer; no code was run."""


class SandboxLimits(BaseModel):
    """Resource limits for one run."""

    cpu_seconds: int = Field(5, ge=1, description="CPU time before SIGXCPU")
    memory_mb: int = Field(512, ge=64, description="address space (RLIMIT_AS)")
    file_size_mb: int = Field(16, ge=1, description="largest file the code may write")
    disk_mb: int = Field(64, ge=1, description="size of the private tmpfs working directory")
    max_processes: int = Field(16, ge=1, description="RLIMIT_NPROC of the run's uid (threads)")
    wall_timeout_s: float = Field(10.0, gt=0, description="wall-clock time before the kill")
    max_output_bytes: int = Field(64_000, ge=1024, description="stdout/stderr kept per stream")
    max_tool_calls: int = Field(200, ge=0, description="tool calls before the channel refuses")
    allowed_imports: tuple[str, ...] = DEFAULT_ALLOWED_IMPORTS


class ToolCall(BaseModel):
    """One tool call the code made through the proxy."""

    tool: str
    args: dict[str, Any] = {}
    result: Any = None
    error: str | None = None
    ms: float = 0.0


class SandboxResult(BaseModel):
    """What a run did. `reason` says why it stopped or what was cut, in a few words."""

    ok: bool
    stdout: str = ""
    stderr: str = ""
    error: str | None = None
    reason: str | None = None
    tool_calls: list[ToolCall] = []
    duration_ms: float = 0.0
    exit_code: int | None = None
    isolation: list[str] = []


class _Capture:
    """Reads one stream, keeps the first `limit` bytes, counts the rest."""

    def __init__(self, limit: int) -> None:
        self.limit, self.kept, self.total = limit, bytearray(), 0

    async def drain(self, stream: asyncio.StreamReader, on_flood: Callable[[], None]) -> None:
        while chunk := await stream.read(65536):
            self.total += len(chunk)
            if len(self.kept) < self.limit:
                self.kept += chunk[: self.limit - len(self.kept)]
            if self.total > 8 * self.limit:
                on_flood()
                return

    @property
    def truncated(self) -> bool:
        return self.total > self.limit

    def text(self) -> str:
        out = self.kept.decode("utf-8", errors="replace")
        if self.truncated:
            out += TRUNCATION_MARKER.format(dropped=self.total - len(self.kept))
        return out


async def run_code(
    code: str,
    tools: dict[str, ToolFn] | None = None,
    limits: SandboxLimits | None = None,
    *,
    python_guard: bool = True,
) -> SandboxResult:
    """Run `code` in a jailed child process.

    Args:
        code: Python source; it prints its answer. Allowed tools are plain functions in its
            globals (`execute_query(sql=...)`) and `call_tool(name, args)` reaches any name,
            which the host refuses unless it is in `tools`.
        tools: the node's allowed tools: name -> async callable taking the arguments dict.
        limits: resource limits; defaults to `SandboxLimits()`.
        python_guard: False leaves only the OS layers (used by the selftest to prove them).

    Raises:
        SandboxUnavailable: an essential OS isolation layer could not be applied.
    """
    limits = limits or SandboxLimits()
    tools = tools or {}
    interpreter = choose_interpreter()
    jail = Jail(
        cpu_seconds=limits.cpu_seconds, memory_mb=limits.memory_mb,
        file_size_mb=limits.file_size_mb, max_processes=limits.max_processes,
        disk_mb=limits.disk_mb, interpreter=interpreter,
    )  # fmt: skip
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    config = {
        "req_fd": req_w, "rep_fd": rep_r, "tools": sorted(tools), "guard": python_guard,
        "allowed_imports": list(limits.allowed_imports), "denied_modules": list(DENIED_MODULES),
    }  # fmt: skip
    start = time.monotonic()
    proc = None
    try:
        proc = await asyncio.create_subprocess_exec(
            interpreter, "-I", "-S", "-B", "-c", _RUNNER, json.dumps(config),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env={}, pass_fds=(req_w, rep_r),
            start_new_session=True, preexec_fn=jail.preexec,
        )  # fmt: skip
    except BaseException:
        for fd in (req_r, req_w, rep_r, rep_w):
            os.close(fd)
        jail.close_status()
        jail.cleanup(None)
        raise
    os.close(req_w)
    os.close(rep_r)
    run = _Run(proc, tools, limits, req_r, rep_w)
    try:
        layers = jail.read_layers()
        missing = _REQUIRED_AS_ROOT - set(layers) if jail.is_root else set()
        if missing:
            raise SandboxUnavailable(
                f"sandbox: could not apply {', '.join(sorted(missing))}; refusing to run code"
            )
        await run.supervise(code)
    finally:
        run.close()
        await asyncio.to_thread(jail.cleanup, proc.pid)
    return run.result(layers, (time.monotonic() - start) * 1000)


class _Run:
    """The host side of one child: feeds the code, serves tool calls, enforces time/output."""

    def __init__(self, proc: asyncio.subprocess.Process, tools: dict[str, ToolFn],
                 limits: SandboxLimits, req_r: int, rep_w: int) -> None:  # fmt: skip
        self.proc, self.tools, self.limits = proc, tools, limits
        self.req_r, self.rep_w = req_r, rep_w
        self.out = _Capture(limits.max_output_bytes)
        self.err = _Capture(limits.max_output_bytes)
        self.calls: list[ToolCall] = []
        self.done: dict[str, Any] | None = None
        self.refused: str | None = None
        self.timed_out = self.flooded = False

    def _kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def _flood(self) -> None:
        self.flooded = True
        self._kill()

    async def supervise(self, code: str) -> None:
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        try:
            self.proc.stdin.write(code.encode())
            await self.proc.stdin.drain()
            self.proc.stdin.close()
        except (BrokenPipeError, ConnectionResetError):
            pass
        work = asyncio.gather(
            self.out.drain(self.proc.stdout, self._flood),
            self.err.drain(self.proc.stderr, self._flood),
            self._serve_tools(),
            self.proc.wait(),
        )
        try:
            await asyncio.wait_for(work, self.limits.wall_timeout_s)
        except TimeoutError:
            self.timed_out = True
            self._kill()
            await self.proc.wait()

    async def _serve_tools(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 20, loop=loop)
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(self.req_r, "rb", 0)
        )
        self.req_r = -1  # owned by the transport now
        w_transport, w_proto = await loop.connect_write_pipe(
            asyncio.Protocol, os.fdopen(self.rep_w, "wb", 0)
        )
        self.rep_w = -1
        try:
            while True:
                try:
                    line = await reader.readline()
                except (ValueError, asyncio.LimitOverrunError):
                    self.done = {
                        "ok": False,
                        "error": "tool request too large",
                        "reason": "protocol",
                    }
                    self._kill()
                    return
                if not line:
                    return
                try:
                    msg = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if msg.get("type") == "done":
                    self.done = self.done or msg
                elif msg.get("type") == "tool":
                    reply = await self._call(msg)
                    if not w_transport.is_closing():
                        w_transport.write((json.dumps(reply, default=str) + "\n").encode())
        finally:
            transport.close()
            w_transport.close()

    async def _call(self, msg: dict[str, Any]) -> dict[str, Any]:
        name, args = str(msg.get("tool")), msg.get("args")
        args = args if isinstance(args, dict) else {}
        call = ToolCall(tool=name, args=args)
        self.calls.append(call)
        t0 = time.monotonic()
        if name not in self.tools:
            call.error = f"tool not allowed: {name} (allowed: {', '.join(sorted(self.tools))})"
            self.refused = self.refused or name
            return {"refused": True, "error": call.error}
        if len(self.calls) > self.limits.max_tool_calls:
            call.error = f"tool call limit reached ({self.limits.max_tool_calls})"
            return {"error": call.error}
        try:
            result = self.tools[name](args)
            call.result = await result if inspect.isawaitable(result) else result
            return {"result": call.result}
        except Exception as e:  # noqa: BLE001 - a failing tool is reported to the code
            call.error = f"{type(e).__name__}: {e}"
            return {"error": call.error}
        finally:
            call.ms = round((time.monotonic() - t0) * 1000, 2)

    def close(self) -> None:
        for fd in (self.req_r, self.rep_w):
            if fd >= 0:
                os.close(fd)
        self.req_r = self.rep_w = -1

    def result(self, layers: list[str], duration_ms: float) -> SandboxResult:
        rc = self.proc.returncode
        done = self.done or {}
        ok, error, reason = bool(done.get("ok")), done.get("error"), done.get("reason")
        if self.timed_out:
            ok, reason = False, "timeout"
            error = f"wall-clock timeout after {self.limits.wall_timeout_s:g} s"
        elif self.flooded:
            ok, reason, error = False, "output truncated", "killed: output far beyond the limit"
        elif rc is not None and rc < 0:
            ok, reason, error = False, *_signal_reason(-rc, self.limits)
        elif not done:
            ok, reason = False, "runner exited abnormally"
            error = error or f"exit code {rc}"
        if self.refused and ok:
            ok, reason = False, f"tool not allowed: {self.refused}"
        if ok and (self.out.truncated or self.err.truncated):
            reason = "output truncated"
        return SandboxResult(
            ok=ok, stdout=self.out.text(), stderr=self.err.text(), error=error, reason=reason,
            tool_calls=self.calls, duration_ms=round(duration_ms, 1), exit_code=rc,
            isolation=layers,
        )  # fmt: skip


def _signal_reason(sig: int, limits: SandboxLimits) -> tuple[str, str]:
    if sig == signal.SIGXCPU:
        return "cpu limit", f"CPU limit of {limits.cpu_seconds} s exceeded"
    if sig == signal.SIGXFSZ:
        return "file size limit", f"file size limit of {limits.file_size_mb} MB exceeded"
    if sig == signal.SIGKILL:
        return "killed", "killed by SIGKILL (CPU hard limit or out of memory)"
    return f"killed by {signal.Signals(sig).name}", f"terminated by signal {sig}"
