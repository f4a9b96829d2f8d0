"""The adversarial pass on the sandbox (issue 10): each finding, judged by its effect on the host.

Host memory exhaustion from inside, forged results, Python-guard bypasses and information
exposure. Every test here failed on the sandbox before the hardening. Issue 23 added the
memory the kernel holds for a guest (memfd) and text the guest chose reaching a terminal.
"""

import asyncio
import json
import os
import sys
import time

import pytest

from sopgraph.nodes.sandbox import SandboxLimits, run_code
from sopgraph.nodes.sandbox._cgroup import own_memory_cgroup
from sopgraph.nodes.sandbox.selftest import fake_tools, load_corpus

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the sandbox jail is Linux-only")

FAST = SandboxLimits(cpu_seconds=2, wall_timeout_s=4)
PROGRAMS = {p.name: p for p in load_corpus()}


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _shmem_mb() -> float:
    """The system's shared memory: where memfd and tmpfs pages are counted."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("Shmem:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no Shmem line in /proc/meminfo")


async def _run_sampled(code: str, limits: SandboxLimits, measure=_rss_mb, **kw):
    """Run `code` while sampling `measure` (default: this host process's resident memory);
    (result, growth MB, s)."""
    base = peak = measure()
    done = False

    async def sample() -> None:
        nonlocal peak
        while not done:
            peak = max(peak, measure())
            await asyncio.sleep(0.01)

    sampler = asyncio.create_task(sample())
    t0 = time.monotonic()
    try:
        res = await run_code(code, fake_tools(), limits, **kw)
    finally:
        done = True
        await sampler
    return res, peak - base, time.monotonic() - t0


def _program(name: str) -> str:
    return PROGRAMS[name].code.replace("{{HOST_PID}}", str(os.getpid()))


# -- host memory exhaustion and the wall clock --------------------------------------------


async def test_refused_calls_with_huge_names_and_unread_replies_keep_host_memory_bounded():
    limits = FAST.model_copy(update={"wall_timeout_s": 3})
    res, growth, wall = await _run_sampled(_program("50_refused_names_unread_replies"), limits)
    assert not res.ok
    assert growth < 100, f"host grew by {growth:.0f} MB"
    assert wall < limits.wall_timeout_s + 3
    assert len(res.tool_calls) <= limits.max_tool_calls
    assert all(len(c.tool) <= 200 for c in res.tool_calls)  # a 200 KB name is not kept


async def test_request_line_over_the_limit_stops_the_run():
    res, growth, _ = await _run_sampled(_program("49_refused_huge_names"), FAST)
    assert not res.ok
    assert res.reason.startswith("protocol")
    assert growth < 100


async def test_recorded_tool_calls_are_bounded():
    code = "for i in range(150):\n    execute_query(sql='s' * 100_000)\nprint('done')"
    limits = FAST.model_copy(update={"max_recorded_bytes": 1_000_000})
    res = await run_code(code, fake_tools(), limits)
    assert res.ok, res.error
    kept = sum(len(json.dumps(c.args)) for c in res.tool_calls)
    assert kept < 1_500_000, f"{kept} bytes of arguments kept"
    assert res.tool_calls[-1].args["truncated"] is True


async def test_wall_limit_holds_when_the_guest_ignores_signals_and_stalls_the_channel():
    code = _program("51_allowed_calls_unread_replies")
    limits = FAST.model_copy(update={"wall_timeout_s": 2, "max_tool_calls": 10_000})
    res, growth, wall = await _run_sampled(code, limits)
    assert (res.ok, res.reason) == (False, "timeout")
    assert wall < limits.wall_timeout_s + 3
    assert growth < 100


# -- forged results ----------------------------------------------------------------------


async def test_frame_walk_to_the_reporter_cannot_turn_a_failure_into_success():
    res = await run_code(_program("54_frame_walk_reporter"), fake_tools(), FAST)
    assert not res.ok
    assert res.reason == "blocked import: os"


@pytest.mark.parametrize("name", ["52_forged_done_then_violation", "53_forged_done_clean_exit"])
async def test_forged_done_line_is_a_protocol_violation(name):
    res = await run_code(_program(name), fake_tools(), FAST)
    assert not res.ok
    assert res.reason.startswith("protocol") or "outside sandbox" in res.reason


async def test_success_follows_the_exit_status_not_forged_details():
    res = await run_code(_program("84_detail_flood_exit_zero"), fake_tools(), FAST)
    assert (res.ok, res.reason) == (True, None)


# -- Python-guard bypass -----------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["55_import_from_guard_closure", "56_import_via_stdlib_builtins", "78_exec_stdlib_module_body"],
)
async def test_unguarded_import_routes_cannot_load_a_module_outside_the_list(name):
    res = await run_code(_program(name), fake_tools(), FAST)
    assert not res.ok
    assert res.reason.startswith("blocked import")
    assert "loaded" not in res.stdout


async def test_guard_closure_holds_no_builtin_import():
    code = (
        "cells = [c.cell_contents for c in __import__.__closure__ or ()]\n"
        "print(any(getattr(v, '__name__', '') == '__import__' for v in cells))"
    )
    res = await run_code(code, limits=FAST)
    assert res.ok, res.error
    assert res.stdout == "False\n"


@pytest.mark.parametrize("guard", [True, False])
async def test_sqlite3_cannot_open_etc_passwd(guard):
    code = (
        # the finding's route: the unguarded import out of the guarded one's closure
        "real = None\n"
        "for cell in getattr(__import__, '__closure__', None) or ():\n"
        "    v = cell.cell_contents\n"
        "    if callable(v) and getattr(v, '__name__', '') == '__import__':\n"
        "        real = v\n"
        "    elif isinstance(v, dict) and callable(v.get('__import__')):\n"
        "        real = v['__import__']\n"
        "if real is None:\n"
        "    b = getattr(__import__, '__globals__', {}).get('__builtins__', __builtins__)\n"
        "    real = b['__import__'] if isinstance(b, dict) else b.__import__\n"
        "sqlite = real('_sqlite3')\n"
        "con = sqlite.connect('/etc/passwd')\n"
        "try:\n    print(con.execute('select 1').fetchall())\n"
        "except Exception as e:\n    print('opened', type(e).__name__)\n"
    )
    res = await run_code(code, fake_tools(), FAST, python_guard=guard)
    assert not res.ok
    assert "opened" not in res.stdout
    # guard on: the load is refused; guard off: the module is absent from the guest's root
    assert res.reason == ("blocked import: _sqlite3" if guard else "error: ModuleNotFoundError")


async def test_forbidden_syscall_kills_the_process():
    res = await run_code(_program("74_chroot_os_layer"), limits=FAST, python_guard=False)
    assert (res.ok, res.reason) == (False, "blocked syscall")


# -- information exposure (guard off: the OS layers alone) -------------------------------


async def test_guest_sees_only_its_own_processes():
    code = (
        "import os\n"
        "pids = [p for p in os.listdir('/proc') if p.isdigit()]\n"
        f"print(len(pids), os.path.exists('/proc/{os.getpid()}'), os.getpid())"
    )
    res = await run_code(code, limits=FAST, python_guard=False)
    assert res.ok, res.error
    assert res.stdout == "1 False 1\n"


@pytest.mark.parametrize(
    "path",
    [
        "/etc/passwd",
        "/root",
        "/work",
        str(os.path.dirname(os.path.dirname(os.path.dirname(__file__)))),
    ],
)
async def test_host_paths_are_absent(path):
    code = f"import os\nprint(os.path.exists({path!r}))"
    res = await run_code(code, limits=FAST, python_guard=False)
    assert res.ok, res.error
    assert res.stdout == "False\n"


async def test_mount_info_and_pid1_reveal_no_host_paths_through_tools():
    code = (
        "execute_query(sql=open('/proc/self/mountinfo').read())\n"
        "execute_query(sql=open('/proc/1/cmdline', 'rb').read().decode(errors='replace'))\n"
    )
    res = await run_code(code, fake_tools(), FAST, python_guard=False)
    assert res.ok, res.error
    sent = json.dumps([c.args for c in res.tool_calls])
    for host_only in ("/work", "/root", "sopgraph", "pytest"):
        assert host_only not in sent


async def test_etc_passwd_cannot_be_sent_through_a_tool():
    res = await run_code(
        _program("63_etc_passwd_exfil_os_layer"), fake_tools(), FAST, python_guard=False
    )
    assert not res.ok
    assert "root:x:0:0" not in json.dumps([c.args for c in res.tool_calls])


async def test_cancelled_run_leaves_no_process_and_no_fd():
    from sopgraph.nodes.sandbox._jail import USED_UIDS, sandbox_pids

    fds = len(os.listdir("/proc/self/fd"))
    task = asyncio.create_task(run_code("import time\ntime.sleep(30)", limits=FAST))
    await asyncio.sleep(1.0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sandbox_pids(USED_UIDS) == []
    assert len(os.listdir("/proc/self/fd")) <= fds


# -- memory the kernel holds for the guest: counted and capped per run, or denied -----------

# The selftest's memory and disk limits: on ef10995 a guest filling memfd files held 885-944 MB
# with them. CPU 5 s, not the selftest's 2 s: on a loaded 2-core host (the local model beside
# the suite) the fill's kernel time reached 2 s before the memory cap, so the run stopped for
# CPU and the cap went untested (session 22). CPU 10 s (wall 15 s) since a fresh-clone make
# test with four helpers' work beside it (load 3 on 2 cores) saw the fill's reclaim pass 5 s.
MEMFD_LIMITS = SandboxLimits(cpu_seconds=10, wall_timeout_s=15, memory_mb=256, disk_mb=48)
CAP_MB = MEMFD_LIMITS.memory_mb + MEMFD_LIMITS.disk_mb
MEMFD = ["86_memfd_fill", "87_memfd_fill_os_layer"]


def _left_cgroups() -> list[str]:
    own = own_memory_cgroup()
    if own is None:
        return []
    return [p.name for p in own[0].iterdir() if p.name.startswith(f"sopgraph-sbx-{os.getpid()}-")]


def _has_memory_cgroup() -> bool:
    return os.geteuid() == 0 and own_memory_cgroup() is not None


@pytest.mark.parametrize("name", MEMFD)
async def test_memfd_fill_is_capped_and_counted_by_the_run_memory_cgroup(name):
    if not _has_memory_cgroup():
        pytest.skip("no memory cgroup to make here (the seccomp test below covers this host)")
    prog = PROGRAMS[name]
    res, rise, wall = await _run_sampled(
        prog.code, MEMFD_LIMITS, _shmem_mb, python_guard=prog.guard
    )
    assert rise < CAP_MB + 64  # what the host saw, whatever the sandbox reports
    assert wall < MEMFD_LIMITS.wall_timeout_s  # stopped at its cap, not held until the wall clock
    assert (res.ok, res.reason) == (False, "memory limit"), res.error
    assert "memcg" in res.isolation and 0 < res.memory_peak_mb <= CAP_MB
    assert _left_cgroups() == []


@pytest.mark.parametrize("name", MEMFD)
async def test_without_a_memory_cgroup_memfd_create_is_denied(name):
    prog = PROGRAMS[name]
    res, rise, _ = await _run_sampled(
        prog.code, MEMFD_LIMITS, _shmem_mb, python_guard=prog.guard, memory_cgroup=False
    )
    assert "memcg" not in res.isolation and res.memory_peak_mb is None
    assert (res.ok, res.reason) == (False, "permission denied"), res.error
    assert rise < 64


async def test_every_run_reports_what_it_held_and_leaves_no_cgroup():
    if not _has_memory_cgroup():
        pytest.skip("no memory cgroup to make here")
    code = "with open('f', 'wb') as f:\n    for _ in range(12):\n        f.write(b'x' * 2**20)"
    res = await run_code(code, limits=MEMFD_LIMITS)
    assert res.ok, res.error
    assert 12 <= res.memory_peak_mb < 12 + 30  # its 12 MB tmpfs file, with the interpreter
    task = asyncio.create_task(run_code("import time\ntime.sleep(30)", limits=MEMFD_LIMITS))
    await asyncio.sleep(1.0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert _left_cgroups() == []


# -- text the guest chose reaches the host's terminal escaped ------------------------------

_ACTIVE = ("\x1b", "\r", "\x07", "\u2028", "\u202e")


@pytest.mark.parametrize(
    "name", ["88_terminal_injection_reason", "89_forged_reason_controls_os_layer"]
)
async def test_a_failure_reason_the_guest_chose_is_escaped_wherever_it_is_printed(name, capsys):
    from sopgraph.nodes.sandbox.selftest import ProgramOutcome, _print

    prog = PROGRAMS[name]
    res = await run_code(prog.code, fake_tools(), FAST, python_guard=prog.guard)
    assert not res.ok
    assert "\\x1b[2K\\r" in res.reason and "contained 99/99" in res.reason
    for text in (res.reason, res.error):
        assert not [c for c in text if c in _ACTIVE or "\ud800" <= c <= "\udfff"], text
    assert "\n" not in res.reason
    text = res.reason
    _print(ProgramOutcome(name=name, attack="a", contained=False, expected="ok", reason=text,
                          duration_ms=1.0, host_issue=f"host: {text}"))  # fmt: skip
    out = capsys.readouterr().out
    assert len(out.splitlines()) == 3  # the outcome, what was expected, the host's issue
    assert not [c for c in out if c in _ACTIVE]
    assert not any(line.startswith("contained") for line in out.splitlines())


async def test_a_library_at_or_above_the_run_s_tmp_is_not_bound(tmp_path):
    # `python -m sopgraph` run from /tmp puts /tmp on the import path, which the tool check binds
    # as a library: bound, it would cover the run's /tmp and its working directory there
    lib = tmp_path / "lib"
    lib.mkdir()
    code = "import os\nprint(os.getcwd(), os.path.isdir('/tmp/sandbox'))"
    for libraries in (("/tmp", str(lib)), ("/",)):
        res = await run_code(code, limits=FAST, python_guard=False, libraries=libraries)
        assert res.ok, (libraries, res.error)
        assert res.stdout == "/tmp/sandbox True\n"
    seen = f"import os\nprint(os.path.isdir({str(lib)!r}))"  # the one under /tmp is still bound
    res = await run_code(seen, limits=FAST, python_guard=False, libraries=("/tmp", str(lib)))
    assert res.ok and res.stdout == "True\n", res.error
