"""`sopgraph sandbox selftest`: run the adversarial corpus and check each attack was contained.

Every program in `sandbox_corpus/` states its attack and the expected containment in its
header (`# expect: cpu limit`, `# expect: ok`); programs marked `# guard: off` run with the
Python-level guard disabled, to show the OS layers hold on their own. After each program the
host is checked: the canary file intact, nothing planted next to it or in the repo, no process
left under a sandbox uid.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from sopgraph.nodes.sandbox import SandboxLimits, SandboxResult, run_code
from sopgraph.nodes.sandbox_jail import PROJECT_ROOT, sandbox_pids

CORPUS_DIR = Path(__file__).parent / "sandbox_corpus"
CANARY_TEXT = "sopgraph canary: must survive every sandboxed program\n"
SELFTEST_LIMITS = SandboxLimits(cpu_seconds=1, wall_timeout_s=6, memory_mb=256, disk_mb=48)


class CorpusProgram(BaseModel):
    """One adversarial (or benign) program and what containing it means."""

    name: str
    attack: str
    expect: list[str]  # ["ok"] or reason substrings, any of which will do
    guard: bool = True
    stdout: str | None = None
    code: str


class ProgramOutcome(BaseModel):
    name: str
    attack: str
    contained: bool
    expected: str
    reason: str | None
    host_issue: str | None = None
    duration_ms: float


class SelftestReport(BaseModel):
    outcomes: list[ProgramOutcome]
    duration_s: float

    @property
    def contained(self) -> int:
        return sum(o.contained for o in self.outcomes)

    @property
    def total(self) -> int:
        return len(self.outcomes)

    @property
    def all_contained(self) -> bool:
        return self.contained == self.total


def load_corpus(directory: Path = CORPUS_DIR) -> list[CorpusProgram]:
    """Parse the corpus headers (`# attack:`, `# expect:`, `# guard:`, `# stdout:`)."""
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


def _judge(prog: CorpusProgram, res: SandboxResult) -> bool:
    if prog.expect == ["ok"]:
        return res.ok and (prog.stdout is None or prog.stdout in res.stdout)
    return (
        not res.ok
        and any(e in (res.reason or "") for e in prog.expect)
        or (res.reason == "output truncated" and "output truncated" in prog.expect)
    )


class _Host:
    """The host-side evidence an escape would leave."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="sopgraph-canary-"))
        self.dir.chmod(0o777)  # world-writable on purpose: only the jail may stop writes
        self.canary = self.dir / "canary.txt"
        self.canary.write_text(CANARY_TEXT)
        self.canary.chmod(0o666)
        self.watched = [self.dir, PROJECT_ROOT, Path(tempfile.gettempdir())]

    def substitute(self, code: str) -> str:
        return (
            code.replace("{{REPO}}", str(PROJECT_ROOT))
            .replace("{{CANARY_DIR}}", str(self.dir))
            .replace("{{CANARY}}", str(self.canary))
        )

    def issue(self) -> str | None:
        try:
            if self.canary.read_text() != CANARY_TEXT:
                return "canary modified"
        except OSError:
            return "canary missing"
        for d in self.watched:
            if (d / "PWNED").exists():
                return f"file planted in {d}"
        if left := sandbox_pids():
            return f"{len(left)} sandbox process(es) left running"
        return None

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


async def run_selftest(
    progress: bool = True, concurrency: int = 3, limits: SandboxLimits = SELFTEST_LIMITS
) -> SelftestReport:
    """Run the corpus a few programs at a time; see `selftest` for the sync entry point."""
    start = time.monotonic()
    host = _Host()
    sem = asyncio.Semaphore(concurrency)
    tools = fake_tools()

    async def one(prog: CorpusProgram) -> ProgramOutcome:
        async with sem:
            res = await run_code(host.substitute(prog.code), tools, limits, python_guard=prog.guard)
        outcome = ProgramOutcome(
            name=prog.name, attack=prog.attack, contained=_judge(prog, res), reason=res.reason,
            expected=" | ".join(prog.expect), duration_ms=res.duration_ms,
        )  # fmt: skip
        if progress:
            _print(outcome)
        return outcome

    try:
        outcomes = await asyncio.gather(*(one(p) for p in load_corpus()))
        # Host checks after the whole batch: concurrent runs share the host.
        if issue := host.issue():
            for o in outcomes:
                o.host_issue, o.contained = issue, False
    finally:
        host.remove()
    return SelftestReport(outcomes=list(outcomes), duration_s=round(time.monotonic() - start, 2))


def _print(o: ProgramOutcome) -> None:
    mark = "contained" if o.contained else "ESCAPED  "
    got = "ok" if o.reason is None else o.reason
    print(f"{mark} {o.name:<32} {got}  [{o.duration_ms:.0f} ms]", flush=True)
    if not o.contained:
        print(f"          expected: {o.expected}", flush=True)


def selftest(progress: bool = True) -> SelftestReport:
    """Run every corpus program in the sandbox and check the host is unaffected.

    Example:
        >>> report = selftest(progress=False)
        >>> report.all_contained
        True
    """
    return asyncio.run(run_selftest(progress=progress))


def main() -> int:
    report = selftest(progress=True)
    for o in report.outcomes:
        if o.host_issue:
            print(f"host check failed: {o.host_issue}")
            break
    print(f"contained {report.contained}/{report.total} in {report.duration_s:.1f} s")
    return 0 if report.all_contained else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
