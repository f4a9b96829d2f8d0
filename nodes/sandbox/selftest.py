"""`sopgraph sandbox selftest`: run the adversarial corpus and check each attack was contained.

Every program in `corpus/` states its attack and the expected containment in its
header (`# expect: cpu limit`, `# expect: ok`); programs marked `# guard: off` run with the
Python-level guard disabled, to show the OS layers hold on their own. Each attack is judged by
its effect on the host, not only by the reason the sandbox gives: no host secret (a token in
the host's environment and canary file, `/etc/passwd`, host paths) in anything the program
printed or sent through a tool, the run ended within its wall limit, the reason and error it
chose reach the terminal escaped, the run held no more than its cap (its memory cgroup's peak,
kernel-held memory included), and the host's memory stayed under `HOST_MEMORY_LIMIT_MB` (its
resident memory, and with every live run's cgroup added, under that plus `concurrency` caps;
sampled through the whole selftest). After the batch:
the canary intact, nothing planted next to it or in the repo, no process left under a sandbox
uid or under the host.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from sopgraph.graphs.untrusted_text import printable
from sopgraph.nodes.sandbox import SandboxLimits, SandboxResult, run_code
from sopgraph.nodes.sandbox._cgroup import live_usage_bytes
from sopgraph.nodes.sandbox._jail import PROJECT_ROOT, USED_UIDS, sandbox_pids

CORPUS_DIR = Path(__file__).parent / "corpus"
CANARY_TEXT = "sopgraph canary: must survive every sandboxed program\n"
SELFTEST_LIMITS = SandboxLimits(cpu_seconds=1, wall_timeout_s=6, memory_mb=256, disk_mb=48)
HOST_MEMORY_LIMIT_MB = 300  # the host process's resident memory, whatever the guests do
# A host that was already large when the selftest began (a test runner) may grow this much.
HOST_MEMORY_GROWTH_MB = 250
WALL_GRACE_S = 2.0  # how far past its wall limit a run may end (process teardown)
SECRET_ENV = "SOPGRAPH_SELFTEST_SECRET"


class CorpusProgram(BaseModel):
    """One adversarial (or benign) program and what containing it means."""

    name: str
    attack: str
    expect: list[str]  # ["ok"] or reason substrings, any of which will do
    guard: bool = True
    stdout: str | None = None
    cpu_seconds: int | None = None  # CPU time this program needs at least (`# cpu: N`)
    code: str


class ProgramOutcome(BaseModel):
    name: str
    attack: str
    contained: bool
    expected: str
    reason: str | None
    host_issue: str | None = None
    duration_ms: float
    memory_peak_mb: float | None = None  # what the run held at most, kernel-held included
    memory_cgroup: bool = False  # whether a memory cgroup counted and capped it


class SelftestReport(BaseModel):
    outcomes: list[ProgramOutcome]
    duration_s: float
    host_peak_mb: float = 0.0  # resident memory of the host process, sampled
    host_limit_mb: float = HOST_MEMORY_LIMIT_MB  # the limit this run was held to
    # the host's resident memory plus what every live run held (their cgroups), sampled
    held_peak_mb: float = 0.0
    held_limit_mb: float = 0.0
    run_cap_mb: float = 0.0  # what one run may hold: its address space plus its tmpfs
    concurrency: int = 3  # runs at a time
    host_issue: str | None = None

    @property
    def contained(self) -> int:
        return sum(o.contained for o in self.outcomes)

    @property
    def total(self) -> int:
        return len(self.outcomes)

    @property
    def all_contained(self) -> bool:
        return self.contained == self.total and self.host_issue is None

    @property
    def kernel_memory_layer(self) -> str:
        """Which layer bounds the memory the kernel holds for a run, in words."""
        counted = sum(o.memory_cgroup for o in self.outcomes)
        cap = f"{self.run_cap_mb:.0f} MB"
        if counted == self.total:
            return f"a memory cgroup per run counts and caps it at {cap}, kernel-held included"
        denied = "memfd_create denied by seccomp, tmpfs and file size limits; not counted"
        if counted == 0:
            return f"no memory cgroup on this host: {denied}"
        return f"a memory cgroup in {counted}/{self.total} runs (cap {cap}); the rest: {denied}"


def load_corpus(directory: Path = CORPUS_DIR) -> list[CorpusProgram]:
    """Parse the corpus headers (`# attack:`, `# expect:`, `# guard:`, `# stdout:`, `# cpu:`)."""
    programs = []
    for path in sorted(directory.glob("[0-9][0-9]_*.py")):
        code = path.read_text()
        head: dict[str, str] = {}
        for line in code.splitlines():
            if not line.startswith("# "):
                break
            key, _, value = line[2:].partition(":")
            head[key.strip()] = value.strip()
        if "expect" not in head:
            raise ValueError(f"{path}: missing '# expect:' header")
        programs.append(
            CorpusProgram(
                name=path.stem,
                attack=head.get("attack", path.stem),
                code=code,
                expect=[e.strip() for e in head["expect"].split("|")],
                guard=head.get("guard", "on") != "off",
                stdout=head.get("stdout"),
                cpu_seconds=int(head["cpu"].split()[0]) if "cpu" in head else None,
            )  # fmt: skip
        )
    return programs


def fake_tools() -> dict[str, Any]:
    """The node's allowed tools for the selftest; `delete_everything` is deliberately absent."""

    async def execute_query(args: dict) -> list[dict]:
        return [{"station": "A", "idle_pct": 31.5}, {"station": "B", "idle_pct": 12.0}]

    async def flaky_metric(args: dict) -> Any:
        raise RuntimeError("metric backend unavailable")

    return {"execute_query": execute_query, "flaky_metric": flaky_metric}


def _unescaped(res: SandboxResult) -> str | None:
    """Text the guest chose that would reach a terminal unescaped."""
    if printable(res.reason or "") != (res.reason or ""):
        return f"unescaped control characters in the reason: {printable(res.reason)}"
    if printable(res.error or "", multiline=True) != (res.error or ""):
        return "unescaped control characters in the error"
    return None


def _judge(prog: CorpusProgram, res: SandboxResult) -> bool:
    if res.ok and "ok" in prog.expect:
        return prog.stdout is None or prog.stdout in res.stdout
    return (
        not res.ok
        and any(e in (res.reason or "") for e in prog.expect)
        or (res.reason == "output truncated" and "output truncated" in prog.expect)
    )


class _Host:
    """The host-side evidence an escape would leave."""

    def __init__(self) -> None:
        self.secret = f"sopgraph-secret-{secrets.token_hex(8)}"
        self.dir = Path(tempfile.mkdtemp(prefix="sopgraph-canary-"))
        self.dir.chmod(0o777)  # world-writable on purpose: only the jail may stop writes
        self.canary = self.dir / "canary.txt"
        self.canary_text = CANARY_TEXT + self.secret + "\n"
        self.canary.write_text(self.canary_text)
        self.canary.chmod(0o666)
        self.watched = [self.dir, PROJECT_ROOT, Path(tempfile.gettempdir())]
        # children the host had before the selftest (a test runner's servers) are not leftovers
        self.children_before = set(_children(os.getpid()))
        self._env_before = os.environ.get(SECRET_ENV)
        os.environ[SECRET_ENV] = self.secret  # in the host's /proc/<pid>/environ from now on
        # Text only the host can see: a leak of any of it through output or tool arguments
        # means the guest read host data.
        self.markers = [self.secret, "root:x:0:0"]
        self.path_markers = [str(PROJECT_ROOT), "/root/"]

    def substitute(self, code: str) -> str:
        return (
            code.replace("{{REPO}}", str(PROJECT_ROOT))
            .replace("{{CANARY_DIR}}", str(self.dir))
            .replace("{{CANARY}}", str(self.canary))
            .replace("{{HOST_PID}}", str(os.getpid()))
        )

    def leak(self, res: SandboxResult) -> str | None:
        """Host data in what the run printed or sent out (host paths count in tool arguments:
        a traceback quoting the program's own source may name them)."""
        sent = json.dumps([c.args for c in res.tool_calls], default=str)
        printed = "\n".join((res.stdout, res.stderr, res.error or ""))
        for marker in self.markers:
            if marker in sent or marker in printed:
                return f"host data leaked: {marker[:24]!r}"
        for marker in self.path_markers:
            if marker in sent:
                return f"host path leaked through a tool: {marker!r}"
        return None

    def issue(self) -> str | None:
        try:
            if self.canary.read_text() != self.canary_text:
                return "canary modified"
        except OSError:
            return "canary missing"
        for d in self.watched:
            if (d / "PWNED").exists():
                return f"file planted in {d}"
        if left := sandbox_pids(USED_UIDS):
            return f"{len(left)} sandbox process(es) left running"
        if kids := set(_children(os.getpid())) - self.children_before:
            return f"{len(kids)} process(es) left under the host"
        return None

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
        if self._env_before is None:
            os.environ.pop(SECRET_ENV, None)
        else:
            os.environ[SECRET_ENV] = self._env_before


def _children(pid: int) -> list[int]:
    """Live (not zombie) direct children of `pid`."""
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 1 and fields[0] != "Z" and int(fields[1]) == pid:
            out.append(int(entry.name))
    return out


def rss_mb() -> float:
    """This process's resident memory now."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class _MemorySampler:
    """Samples the host's resident memory, alone and with what every live run holds (their
    memory cgroups: kernel-held memory included), every few milliseconds."""

    def __init__(self, every_s: float = 0.02) -> None:
        self.every_s, self.peak = every_s, rss_mb()
        self.held_peak = self.peak

    async def run(self) -> None:
        while True:
            rss = rss_mb()
            self.peak = max(self.peak, rss)
            self.held_peak = max(self.held_peak, rss + live_usage_bytes() / 2**20)
            await asyncio.sleep(self.every_s)


async def run_selftest(
    progress: bool = True,
    concurrency: int = 3,
    limits: SandboxLimits = SELFTEST_LIMITS,
    memory_cgroup: bool = True,
) -> SelftestReport:
    """Run the corpus a few programs at a time; see `selftest` for the sync entry point."""
    start = time.monotonic()
    host = _Host()
    sem = asyncio.Semaphore(concurrency)
    tools = fake_tools()
    sampler = _MemorySampler()
    limit_mb = max(HOST_MEMORY_LIMIT_MB, sampler.peak + HOST_MEMORY_GROWTH_MB)
    run_cap_mb = limits.memory_mb + limits.disk_mb
    held_limit_mb = limit_mb + concurrency * run_cap_mb
    maxrss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    sampling = asyncio.create_task(sampler.run())

    async def one(prog: CorpusProgram) -> ProgramOutcome:
        async with sem:
            t0 = time.monotonic()
            cpu = max(prog.cpu_seconds or 0, limits.cpu_seconds)  # a header raises it, never lowers
            own = limits.model_copy(update={"cpu_seconds": cpu})
            res = await run_code(
                host.substitute(prog.code), tools, own, python_guard=prog.guard,
                memory_cgroup=memory_cgroup,
            )  # fmt: skip
            wall = time.monotonic() - t0
        issue = host.leak(res) or _unescaped(res)
        held = res.memory_peak_mb
        if held is not None and held > run_cap_mb:
            issue = issue or f"the run held {held:.0f} MB, over its {run_cap_mb} MB cap"
        if wall > limits.wall_timeout_s + WALL_GRACE_S:
            issue = issue or f"ran {wall:.1f} s, past its {limits.wall_timeout_s:g} s wall limit"
        if sampler.peak > limit_mb:
            issue = issue or f"host memory reached {sampler.peak:.0f} MB"
        if sampler.held_peak > held_limit_mb:
            issue = issue or f"host and runs held {sampler.held_peak:.0f} MB"
        outcome = ProgramOutcome(
            name=prog.name, attack=prog.attack, contained=_judge(prog, res) and issue is None,
            reason=res.reason, expected=" | ".join(prog.expect), duration_ms=res.duration_ms,
            host_issue=issue, memory_peak_mb=held, memory_cgroup="memcg" in res.isolation,
        )  # fmt: skip
        if progress:
            _print(outcome)
        return outcome

    batch_issue = None
    try:
        outcomes = await asyncio.gather(*(one(p) for p in load_corpus()))
        # Host checks after the whole batch: concurrent runs share the host.
        batch_issue = host.issue()
        if batch_issue:
            for o in outcomes:
                o.host_issue, o.contained = batch_issue, False
    finally:
        sampling.cancel()
        host.remove()
    # the kernel's lifetime peak counts only if it rose during the selftest
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    peak = max(sampler.peak, maxrss if maxrss > maxrss_before else 0.0)
    if peak > limit_mb:
        batch_issue = batch_issue or f"host peak memory {peak:.0f} MB over {limit_mb:.0f}"
    held_peak = max(sampler.held_peak, peak)
    if held_peak > held_limit_mb:
        batch_issue = batch_issue or f"host and runs held {held_peak:.0f} MB"
    return SelftestReport(
        outcomes=list(outcomes), duration_s=round(time.monotonic() - start, 2),
        host_peak_mb=round(peak, 1), host_limit_mb=round(limit_mb, 1), host_issue=batch_issue,
        held_peak_mb=round(held_peak, 1), held_limit_mb=round(held_limit_mb, 1),
        run_cap_mb=run_cap_mb, concurrency=concurrency,
    )  # fmt: skip


def _print(o: ProgramOutcome) -> None:
    mark = "contained" if o.contained else "ESCAPED  "
    got = "ok" if o.reason is None else printable(o.reason)
    held = "" if o.memory_peak_mb is None else f", held {o.memory_peak_mb:.0f} MB"
    print(f"{mark} {o.name:<34} {got}  [{o.duration_ms:.0f} ms{held}]", flush=True)
    if not o.contained:
        print(f"          expected: {o.expected}", flush=True)
        if o.host_issue:
            print(f"          host: {printable(o.host_issue)}", flush=True)


def selftest(progress: bool = True) -> SelftestReport:
    """Run every corpus program in the sandbox and check the host is unaffected.

    Example:
        >>> report = selftest(progress=False)
        >>> report.all_contained
        True
    """
    return asyncio.run(run_selftest(progress=progress))


def summary(report: SelftestReport) -> list[str]:
    """The lines printed after the programs': host checks, memory figures, the count."""
    lines = [f"host check failed: {printable(report.host_issue)}"] if report.host_issue else []
    lines.append(
        f"host peak memory {report.host_peak_mb:.0f} MB (limit {report.host_limit_mb:.0f} MB, "
        "resident, sampled every 20 ms and getrusage)"
    )
    if any(o.memory_cgroup for o in report.outcomes):
        lines.append(
            f"host and sandbox runs together peaked at {report.held_peak_mb:.0f} MB, kernel-held "
            f"memory included (limit {report.held_limit_mb:.0f} MB: the host's "
            f"{report.host_limit_mb:.0f} plus {report.concurrency} runs at "
            f"{report.run_cap_mb:.0f} MB)"
        )
    lines.append(f"kernel-held memory: {report.kernel_memory_layer}")
    lines.append(f"contained {report.contained}/{report.total} in {report.duration_s:.1f} s")
    return lines


def main() -> int:
    report = selftest(progress=True)
    print("\n".join(summary(report)))
    return 0 if report.all_contained else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
