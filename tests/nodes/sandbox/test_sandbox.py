import asyncio
import re
import sys

import pytest

from sopgraph.nodes.sandbox import TRUNCATION_MARKER, SandboxLimits, run_code
from sopgraph.nodes.sandbox.selftest import (
    HOST_MEMORY_LIMIT_MB,
    ProgramOutcome,
    SelftestReport,
    fake_tools,
    load_corpus,
    run_selftest,
    summary,
)

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the sandbox jail is Linux-only")

FAST = SandboxLimits(cpu_seconds=2, wall_timeout_s=4)


async def test_corpus_is_contained(capsys):
    report = await run_selftest(progress=True)
    escaped = [
        (o.name, o.reason, o.expected, o.host_issue) for o in report.outcomes if not o.contained
    ]
    assert escaped == []
    assert report.host_issue is None
    assert report.total == len(load_corpus()) >= 89
    # standalone the limit is HOST_MEMORY_LIMIT_MB; inside a big host (this test runner) it is
    # where the host began plus HOST_MEMORY_GROWTH_MB
    assert HOST_MEMORY_LIMIT_MB <= report.host_limit_mb
    assert 0 < report.host_peak_mb < report.host_limit_mb
    # what the programs printed and the summary: the memfd attacks with what they held, the
    # host's memory with what every run held, and which layer bounds kernel-held memory
    lines = capsys.readouterr().out.splitlines() + summary(report)
    assert not [c for c in "\n".join(lines) if c in "\x1b\r\x07\u2028"]
    memfd = [line for line in lines if "_memfd_fill" in line]
    assert len(memfd) == 2 and all(line.startswith("contained") for line in memfd)
    (layer,) = [line for line in lines if line.startswith("kernel-held memory: ")]
    if all(o.memory_cgroup for o in report.outcomes):
        held = [int(re.search(r", held (\d+) MB\]", line)[1]) for line in memfd]
        assert all("memory limit" in line for line in memfd) and all(200 < h <= 304 for h in held)
        assert "a memory cgroup per run counts and caps it at 304 MB" in layer
        assert 0 < report.held_peak_mb < report.held_limit_mb
        assert any(line.startswith("host and sandbox runs together peaked at") for line in lines)
    else:
        assert all("permission denied" in line for line in memfd)
        assert "memfd_create denied by seccomp" in layer
    assert lines[-1].startswith(f"contained {report.total}/{report.total} in ")


def test_corpus_has_attacks_and_benign_programs():
    corpus = load_corpus()
    assert sum(p.expect == ["ok"] for p in corpus) >= 3
    assert sum(not p.guard for p in corpus) >= 5  # the OS layers are shown on their own
    # the memfd attacks test the memory cap: their CPU limit leaves the kernel's reclaim time
    memfd = [p for p in corpus if "_memfd_fill" in p.name]
    assert len(memfd) == 2 and {p.cpu_seconds for p in memfd} == {3}
    assert all(p.cpu_seconds is None for p in corpus if p not in memfd)


async def test_benign_code_returns_its_stdout():
    res = await run_code("import math\nprint(math.factorial(10))", limits=FAST)
    assert res.ok, res.error
    assert res.stdout == "3628800\n"
    assert res.reason is None


async def test_allowed_tool_call_is_proxied_and_recorded():
    code = "rows = execute_query(sql='select 1')\nprint(len(rows), rows[0]['idle_pct'])"
    res = await run_code(code, fake_tools(), FAST)
    assert res.ok, res.error
    assert res.stdout == "2 31.5\n"
    [call] = res.tool_calls
    assert (call.tool, call.args, call.error) == ("execute_query", {"sql": "select 1"}, None)


async def test_forbidden_tool_is_refused_inside_the_child():
    code = (
        "try:\n    call_tool('delete_everything', {})\n"
        "except ToolNotAllowed as e:\n    print('refused:', e)"
    )
    res = await run_code(code, fake_tools(), FAST)
    assert not res.ok
    assert res.reason == "tool not allowed: delete_everything"
    assert "refused: tool not allowed: delete_everything" in res.stdout
    assert res.tool_calls[0].error.startswith("tool not allowed")


async def test_timeout_reason():
    res = await run_code(
        "import time\ntime.sleep(30)", limits=FAST.model_copy(update={"wall_timeout_s": 1})
    )
    assert (res.ok, res.reason) == (False, "timeout")
    assert res.duration_ms < 5000


async def test_memory_limit_reason():
    res = await run_code("x = bytearray(4 * 2**30)", limits=FAST)
    assert (res.ok, res.reason) == (False, "memory limit")


async def test_output_is_truncated_with_a_marker():
    limits = FAST.model_copy(update={"max_output_bytes": 2000})
    res = await run_code("print('x' * 5000)", limits=limits)
    assert res.ok and res.reason == "output truncated"
    assert res.stdout.startswith("x" * 2000)
    assert TRUNCATION_MARKER.format(dropped=3001) in res.stdout


async def test_loopback_server_on_host_is_unreachable():
    async def handle(reader, writer):
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        code = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)"
        res = await run_code(code, limits=FAST, python_guard=False)
    assert (res.ok, res.reason) == (False, "network disabled")


async def test_runs_as_root_apply_every_os_layer():
    import os

    if os.geteuid() != 0:
        pytest.skip("uid drop and namespaces are exercised when the host runs as root")
    res = await run_code("print('hi')", limits=FAST)
    expected = {"rlimits", "uid", "netns", "pidns", "mountns", "rootfs", "procfs", "seccomp"}
    assert expected | {"tmp cwd"} <= set(res.isolation)


def _outcome(name: str, cgroup: bool) -> ProgramOutcome:
    return ProgramOutcome(
        name=name, attack="a", contained=True, expected="ok", reason=None, duration_ms=1.0,
        memory_peak_mb=8.0 if cgroup else None, memory_cgroup=cgroup,
    )  # fmt: skip


@pytest.mark.parametrize(
    "cgroups,layer",
    [
        ((True, True), "a memory cgroup per run counts and caps it at 304 MB"),
        ((False, False), "no memory cgroup on this host: memfd_create denied by seccomp"),
        ((True, False), "a memory cgroup in 1/2 runs (cap 304 MB); the rest: memfd_create"),
    ],
)
def test_selftest_says_which_layer_bounds_kernel_held_memory(cgroups, layer):
    outcomes = [_outcome(f"p{i}", c) for i, c in enumerate(cgroups)]
    report = SelftestReport(outcomes=outcomes, duration_s=1.0, run_cap_mb=304)
    assert report.kernel_memory_layer.startswith(layer)
