"""Run LLM-generated Python in a separate, jailed process and return what it did.

The CodeAct sub-agent's code never runs in the main process: it runs in a fresh `python -I`
child with resource limits, no network, its own PID namespace and minimal root filesystem,
an unprivileged uid, an import allow-list and only the node's allowed MCP tools, proxied by
the host through a bounded channel. The verdict rests on what the guest cannot write: the
exit status reported by the jail's supervisor and the host's own record (refused tools,
protocol violations, limits, the wall clock, which the host enforces by killing the run).

Memory: the guest's address space is capped at `memory_mb` (RLIMIT_AS). What the kernel holds
for it (tmpfs and `memfd` pages, pipe buffers, page tables) is counted and capped by a memory
cgroup per run at `memory_mb + disk_mb` in all; `SandboxResult.memory_peak_mb` is its peak and
"memcg" is among the isolation layers. Where no cgroup can be made (not root, no memory
controller), `memfd_create` is denied by seccomp and kernel-held memory is bounded by the
tmpfs (`disk_mb`), `file_size_mb` per file and 64 open files, but not counted. Text the guest
chose (the failure reason and error) is escaped before it leaves this module.

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
import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from sopgraph.graphs.untrusted_text import printable
from sopgraph.nodes.sandbox._channel import ToolCall, ToolChannel, ToolFn
from sopgraph.nodes.sandbox._jail import Jail, choose_interpreter

__all__ = [
    "DEFAULT_ALLOWED_IMPORTS", "DENIED_MODULES", "TRUNCATION_MARKER", "SandboxLimits",
    "SandboxResult", "SandboxUnavailable", "ToolCall", "ToolFn", "run_code",
]  # fmt: skip

DEFAULT_ALLOWED_IMPORTS = (
    "math", "statistics", "json", "datetime", "re", "collections", "itertools", "functools",
    "decimal", "fractions", "time", "typing", "dataclasses", "heapq", "bisect", "random",
    "string", "operator", "copy", "textwrap", "enum", "numbers", "calendar", "zoneinfo",
)  # fmt: skip
# Modules whose first load, by any route, stops the program with their name as the reason
# (any other module outside the allow-list is stopped too, with a generic reason). The C
# modules that open files themselves (sqlite, dbm, readline, curses, nis, spwd ...) are here
# because the audit hook never sees their opens.
DENIED_MODULES = (
    "ctypes", "_ctypes", "socket", "_socket", "ssl", "_ssl", "subprocess", "_posixsubprocess",
    "multiprocessing", "_multiprocessing", "pty", "fcntl", "mmap", "gc", "resource", "pwd",
    "grp", "termios", "asyncio", "selectors", "select", "urllib", "http", "ftplib", "smtplib",
    "importlib", "runpy", "pickle", "_pickle", "marshal", "shutil", "tempfile", "threading",
    "_thread", "concurrent", "_xxsubinterpreters", "faulthandler", "tracemalloc", "code",
    "sqlite3", "_sqlite3", "dbm", "_dbm", "_gdbm", "readline", "curses", "_curses",
    "_curses_panel", "_tkinter", "syslog", "_posixshmem", "nis", "spwd", "crypt", "_crypt",
    "ossaudiodev", "_lsprof", "_testcapi", "_testinternalcapi", "_uuid",
)  # fmt: skip
TRUNCATION_MARKER = "\n[... output truncated: {dropped} more bytes not shown ...]\n"
# The jail starts `python -I -S -c <source>`: the runner is passed as text, never imported by path.
_RUNNER = (Path(__file__).parent / "_runner.py").read_text()
# Essential layers when we are root; without them a run is refused rather than weakened.
_REQUIRED_AS_ROOT = {"rlimits", "uid", "tmp cwd", "pidns", "rootfs"}
# Runner exit statuses (see _runner.py).
_EXIT_OK, _EXIT_ERROR, _EXIT_VIOLATION = 0, 1, 86
_KILL_GRACE_S = 3.0  # after the wall-clock kill, how long the host waits for the pipes


class SandboxUnavailable(RuntimeError):
    """The OS refused an essential isolation layer; no code was run."""


class SandboxLimits(BaseModel):
    """Resource limits for one run (the module docstring says what bounds the host's memory)."""

    cpu_seconds: int = Field(5, ge=1, description="CPU time before SIGXCPU")
    memory_mb: int = Field(
        512, ge=64, description="address space (RLIMIT_AS); plus disk_mb: all the run holds"
    )
    file_size_mb: int = Field(16, ge=1, description="largest file the code may write")
    disk_mb: int = Field(64, ge=1, description="size of the private tmpfs working directory")
    max_processes: int = Field(16, ge=1, description="RLIMIT_NPROC of the run's uid (threads)")
    wall_timeout_s: float = Field(10.0, gt=0, description="wall-clock time before the kill")
    max_output_bytes: int = Field(64_000, ge=1024, description="stdout/stderr kept per stream")
    max_tool_calls: int = Field(200, ge=0, description="tool calls before the channel refuses")
    max_request_bytes: int = Field(
        256_000, ge=1024, description="largest tool request line the host reads"
    )
    max_reply_bytes: int = Field(
        4_000_000, ge=1024, description="largest tool result sent back to the code"
    )
    max_recorded_bytes: int = Field(
        2_000_000, ge=0, description="tool arguments and results kept in the result, in all"
    )
    allowed_imports: tuple[str, ...] = DEFAULT_ALLOWED_IMPORTS


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
    memory_peak_mb: float | None = Field(
        None, description="most the run held at once, kernel-held memory included (its cgroup)"
    )


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
    memory_cgroup: bool = True,
    libraries: tuple[str, ...] = (),
) -> SandboxResult:
    """Run `code` in a jailed child process.

    Args:
        code: Python source; it prints its answer. Allowed tools are plain functions in its
            globals (`execute_query(sql=...)`) and `call_tool(name, args)` reaches any name,
            which the host refuses unless it is in `tools`.
        tools: the node's allowed tools: name -> async callable taking the arguments dict.
        limits: resource limits; defaults to `SandboxLimits()`.
        python_guard: False leaves only the OS layers (used by the selftest to prove them).
        memory_cgroup: False runs without a memory cgroup, as on a host that offers none
            (`memfd_create` is then denied).
        libraries: host directories bound read-only into the run's root at their own paths
            (site-packages, a tool library), for code that imports installed packages; it
            needs `python_guard=False` (the allow-list would stop them) and a private root
            filesystem, without which the run is refused: the OS layers alone contain it.

    Raises:
        SandboxUnavailable: an essential OS isolation layer could not be applied.
    """
    limits = limits or SandboxLimits()
    tools = tools or {}
    interpreter = choose_interpreter()
    jail = Jail(
        cpu_seconds=limits.cpu_seconds, memory_mb=limits.memory_mb,
        file_size_mb=limits.file_size_mb, max_processes=limits.max_processes,
        disk_mb=limits.disk_mb, interpreter=interpreter, imports=limits.allowed_imports,
        memory_cgroup=memory_cgroup, libraries=libraries,
    )  # fmt: skip
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    config = {
        "req_fd": req_w, "rep_fd": rep_r, "tools": sorted(tools), "guard": python_guard,
        "allowed_imports": list(limits.allowed_imports), "denied_modules": list(DENIED_MODULES),
    }  # fmt: skip
    start = time.monotonic()
    try:
        proc = await asyncio.create_subprocess_exec(
            jail.program, "-I", "-S", "-B", "-c", _RUNNER, json.dumps(config),
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
    jail.started()
    os.close(req_w)
    os.close(rep_r)
    run = _Run(proc, jail, tools, limits)
    layers: list[str] = []
    try:
        layers = jail.read_layers()
        jail.watch_guest(layers)
        missing = _REQUIRED_AS_ROOT - set(layers) if jail.is_root else set()
        if libraries and "rootfs" not in layers:  # else the host's own tree would be in view
            missing.add("rootfs")
        if missing:
            raise SandboxUnavailable(
                f"sandbox: could not apply {', '.join(sorted(missing))}; refusing to run code"
            )
        await run.supervise(code, req_r, rep_w)
    finally:
        run.kill()  # normally long gone (a cancelled or refused run is not)
        if not run.channel.owns_fds:
            os.close(req_r)
            os.close(rep_w)
        await asyncio.to_thread(jail.cleanup, proc.pid if proc.returncode is None else None)
        status = jail.exit_status()
        jail.close_status()
    return run.result(layers, status, (time.monotonic() - start) * 1000)


class _Run:
    """The host side of one child: feeds the code, serves tool calls, enforces time/output."""

    def __init__(self, proc: asyncio.subprocess.Process, jail: Jail,
                 tools: dict[str, ToolFn], limits: SandboxLimits) -> None:  # fmt: skip
        self.proc, self.jail, self.limits = proc, jail, limits
        self.out = _Capture(limits.max_output_bytes)
        self.err = _Capture(limits.max_output_bytes)
        self.channel = ToolChannel(tools, limits, self.kill)
        self.timed_out = self.flooded = False

    def kill(self) -> None:
        if self.proc.returncode is not None:
            return
        if not self.jail.kill_guest():
            self.kill_group()

    def kill_group(self) -> None:
        if self.proc.returncode is not None:
            return  # reaped: its group id may already belong to someone else
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def _flood(self) -> None:
        self.flooded = True
        self.kill()

    def _wall(self) -> None:
        if self.proc.returncode is None:
            self.timed_out = True
            self.kill()

    async def supervise(self, code: str, req_r: int, rep_w: int) -> None:
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        # The wall clock is the host's: a timer kills the process group whatever the guest
        # does, even while the host waits on a stalled pipe.
        timer = asyncio.get_running_loop().call_later(self.limits.wall_timeout_s, self._wall)
        try:
            try:
                self.proc.stdin.write(code.encode())
                await self.proc.stdin.drain()
                self.proc.stdin.close()
            except (BrokenPipeError, ConnectionResetError):
                pass
            work = asyncio.gather(
                self.out.drain(self.proc.stdout, self._flood),
                self.err.drain(self.proc.stderr, self._flood),
                self.channel.serve(req_r, rep_w),
                self.proc.wait(),
            )
            work.add_done_callback(_retrieve)  # a cancelled run leaves no unread exception
            try:
                await asyncio.wait_for(work, self.limits.wall_timeout_s + _KILL_GRACE_S)
            except TimeoutError:
                self._wall()
                try:
                    await asyncio.wait_for(self.proc.wait(), _KILL_GRACE_S)
                except TimeoutError:
                    self.kill_group()
                    await self.proc.wait()
        finally:
            timer.cancel()

    def result(
        self, layers: list[str], status: tuple[int, float] | None, duration_ms: float
    ) -> SandboxResult:
        """The verdict, from the supervisor's report and the host's own record only."""
        ch, limits = self.channel, self.limits
        detail = ch.detail or {}
        code = _exit_code(status[0] if status else None, self.proc.returncode)
        cpu_s = status[1] if status else 0.0
        ok, error, reason = False, None, None
        if self.timed_out:
            reason, error = "timeout", f"wall-clock timeout after {limits.wall_timeout_s:g} s"
        elif self.flooded:
            reason, error = "output truncated", "killed: output far beyond the limit"
        elif ch.violation:
            reason, error = ch.violation, f"stopped by the host: {ch.violation}"
        elif code is None:
            reason, error = "runner exited abnormally", "no exit status from the jail"
        elif code == -signal.SIGKILL and self.jail.oom_killed:
            cap = self.jail.memory_cap // 2**20
            reason, error = "memory limit", f"memory limit of {cap} MB reached (all it held)"
        elif (
            code < 0
            and -code in (signal.SIGKILL, signal.SIGXCPU)
            and cpu_s >= 0.8 * limits.cpu_seconds
        ):
            # The kernel's kill at RLIMIT_CPU (the rusage figure lags the kernel's own clock).
            reason, error = "cpu limit", f"CPU limit of {limits.cpu_seconds} s exceeded"
        elif code < 0:
            reason, error = _signal_reason(-code, limits)
        elif code == _EXIT_OK:
            ok = True
        elif code == _EXIT_VIOLATION:
            reason = detail.get("reason") or "sandbox violation"
            error = detail.get("error") or f"SandboxViolation: {reason}"
        elif code == _EXIT_ERROR:
            reason = detail.get("reason") or "error"
            error = detail.get("error") or "the code raised an error"
        else:
            reason, error = "runner exited abnormally", f"exit code {code}"
        if ch.refused and ok:
            ok, reason = False, f"tool not allowed: {ch.refused}"
        if ok and (self.out.truncated or self.err.truncated):
            reason = "output truncated"
        peak = self.jail.memory_peak
        return SandboxResult(
            ok=ok, stdout=self.out.text(), stderr=self.err.text(),
            # the guest chose these (its detail line, a file name, a tool name): escaped here,
            # so no caller can print them raw
            error=None if error is None else printable(error, multiline=True),
            reason=None if reason is None else printable(reason),
            tool_calls=ch.calls, duration_ms=round(duration_ms, 1), exit_code=code,
            isolation=layers, memory_peak_mb=None if peak is None else round(peak / 2**20, 1),
        )  # fmt: skip


def _retrieve(fut: asyncio.Future[Any]) -> None:
    if not fut.cancelled():
        fut.exception()


def _exit_code(status: int | None, returncode: int | None) -> int | None:
    """Exit code (negative: signal) from the supervisor's wait status; the supervisor's own
    returncode mirrors it when the jail had no supervisor (no PID namespace)."""
    if status is not None:
        return os.waitstatus_to_exitcode(status)
    return returncode


def _signal_reason(sig: int, limits: SandboxLimits) -> tuple[str, str]:
    if sig == signal.SIGXCPU:
        return "cpu limit", f"CPU limit of {limits.cpu_seconds} s exceeded"
    if sig == signal.SIGXFSZ:
        return "file size limit", f"file size limit of {limits.file_size_mb} MB exceeded"
    if sig == signal.SIGSYS:
        return "blocked syscall", "killed by the seccomp filter: a forbidden system call"
    if sig == signal.SIGKILL:
        return "killed", "killed by SIGKILL (CPU hard limit or out of memory)"
    return f"killed by {signal.Signals(sig).name}", f"terminated by signal {sig}"
