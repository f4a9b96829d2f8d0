"""OS-level containment for the sandbox: the part that holds even when Python-level hooks fail.

A sandboxed child gets, in a `preexec_fn` that runs between fork and exec: resource limits;
its own network (nothing is up, not even loopback), PID, UTS, IPC and mount namespaces; a
minimal root filesystem (`_rootfs`: only the interpreter, its stdlib and libraries,
read-only, a fresh `/proc` that lists only the run's processes, a size-limited tmpfs as its
working directory); a seccomp filter (no sockets, no fork, and the process is killed on
mount/ptrace/namespace/kernel-module syscalls); a fresh unprivileged uid, unique per run; and
a memory cgroup of its own (`_cgroup`) that caps everything the run holds, kernel-held
memory included, at its address space plus its tmpfs (without one, `memfd_create` is denied).
The child forks once more inside the new PID namespace: the first process stays outside as a
supervisor that reports the jailed process's wait status on a pipe only it holds, so the
host's verdict rests on a channel the guest cannot write. The layers actually applied are
reported back and a run refuses to start without the essential ones.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import random
import resource
import shutil
import signal
import struct
import sys
import tempfile
import time
from pathlib import Path

from sopgraph.nodes.sandbox._cgroup import MemoryCgroup
from sopgraph.nodes.sandbox._rootfs import SANDBOX_CWD, apply_plan, mount_proc, rootfs_plan
from sopgraph.nodes.sandbox._seccomp import seccomp_program

# A fresh uid per run, far above any uid a distribution hands out.
SANDBOX_UID_MIN = 1_500_000_000
SANDBOX_UID_MAX = 1_600_000_000

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # the checkout, or site-packages/sopgraph
USED_UIDS: set[int] = set()  # every sandbox uid this process handed out (for the selftest)
_HIDDEN_CANDIDATES = ("/root", "/home", "/work", "/mnt", "/srv", "/media", "/run", "/var/tmp")
_KEEP = ("/", "/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc", "/proc", "/dev", "/sys", "/var")

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWUTS = 0x04000000
_CLONE_NEWIPC = 0x08000000
_PR_SET_PDEATHSIG = 1
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REC, _MS_PRIVATE = 0x4000, 1 << 18
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def hidden_paths(interpreter: str) -> list[str]:
    """Directories to hide from the child: never an ancestor of the interpreter or its stdlib."""
    needed = [Path(interpreter).resolve(), Path(os.__file__).resolve()]
    candidates = {*_HIDDEN_CANDIDATES, str(PROJECT_ROOT), str(Path.cwd())}
    out = []
    for c in sorted(candidates):
        p = Path(c)
        if c in _KEEP or not p.is_dir() or p.is_symlink():
            continue
        if any(n == p or p in n.parents for n in needed):
            continue
        if not any(Path(o) in p.parents for o in out):
            out.append(c)
    return out


def choose_interpreter() -> str:
    """A python the sandbox uid can run: the system one, unless this one lives somewhere public."""
    for cand in ("/usr/bin/python3", "/usr/local/bin/python3", sys._base_executable):
        if cand and os.path.exists(cand) and not str(Path(cand).resolve()).startswith("/root/"):
            return cand
    return sys._base_executable


class Jail:
    """The OS layers for one run: call `preexec` in the child, `cleanup` in the parent."""

    def __init__(self, *, cpu_seconds: int, memory_mb: int, file_size_mb: int,
                 max_processes: int, disk_mb: int, interpreter: str,
                 imports: tuple[str, ...] = (), memory_cgroup: bool = True,
                 libraries: tuple[str, ...] = ()) -> None:  # fmt: skip
        self.limits = (cpu_seconds, memory_mb, file_size_mb, max_processes, disk_mb)
        self.is_root = os.geteuid() == 0
        self.uid = random.randrange(SANDBOX_UID_MIN, SANDBOX_UID_MAX) if self.is_root else -1
        USED_UIDS.add(self.uid)
        self.hide = hidden_paths(interpreter)
        self.plan = rootfs_plan(interpreter, tuple(sorted(imports)), tuple(sorted(libraries)))
        # The path to exec: inside the minimal root only the interpreter's real path exists.
        self.program = self.plan.program if self.plan else interpreter
        # Fallback working directory, used only when no mount namespace can be had; with one,
        # the (empty) directory is only the mount point of the new root.
        self.workdir = tempfile.mkdtemp(prefix="sopgraph-sbx-")
        if self.is_root:
            os.chown(self.workdir, self.uid, self.uid)
        os.chmod(self.workdir, 0o700)
        self._status_r, self._status_w = os.pipe()
        # Written only by the supervisor (outside the guest's PID namespace, never the guest).
        self._exit_r, self._exit_w = os.pipe()
        self._guest_fd = -1
        # Everything the run holds, kernel-held memory included: its address space and tmpfs.
        self.memory_cap = (memory_mb + disk_mb) * 1024 * 1024
        self.cgroup = (
            MemoryCgroup.create(f"sopgraph-sbx-{os.getpid()}-{self.uid}", self.memory_cap)
            if memory_cgroup and self.is_root
            else None
        )
        self.memory_peak: int | None = None  # read from the cgroup by `cleanup`
        self.oom_killed = False

    def preexec(self) -> None:
        """Runs in the forked child before exec: no allocation-heavy work, no locks."""
        layers: list[str] = []
        cwd = self.workdir
        if self._unshare(self.is_root):
            layers.append("netns")
            child = os.fork()
            if child:
                self._supervise(child)  # never returns
            layers.append("pidns")
            os.setsid()  # out of the supervisor's process group: kill(0) cannot reach it
            _libc.sethostname(b"sandbox", 7)
            owner = self.uid if self.is_root else -1
            if self.plan and apply_plan(self.plan, self.workdir, self.limits[4], owner):
                layers += ["mountns", "rootfs"]
                cwd = SANDBOX_CWD
            elif self._mounts(self.limits[4]):
                layers.append("mountns")
                cwd = SANDBOX_CWD
                os.mkdir(cwd, 0o700)
                if self.is_root:
                    os.chown(cwd, self.uid, self.uid)
            if "mountns" in layers and mount_proc():
                layers.append("procfs")
        # The jailed process alone (not the supervisor, a copy of the host whose shared pages
        # would make it the OOM killer's pick) joins the run's memory cgroup.
        if self.cgroup is not None and _join(self.cgroup.procs_fd):
            layers.append("memcg")
        os.chdir(cwd)
        layers.append("tmp cwd")
        # Without a cgroup nothing would count memfd pages: the call is denied instead.
        seccomp = seccomp_program(os.getpid(), deny_memfd="memcg" not in layers)
        if seccomp is not None:
            ok = _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 and (
                _libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(seccomp), 0, 0) == 0
            )
            if ok:
                layers.append("seccomp")
        if self.is_root:
            os.setgroups([])
            os.setresgid(self.uid, self.uid, self.uid)
            os.setresuid(self.uid, self.uid, self.uid)
            layers.append("uid")
        if "pidns" in layers:
            # Pid 1 of the new namespace dies with the supervisor and takes the namespace
            # along. Set after the uid change, which clears it.
            _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        layers.append("rlimits")
        status = json.dumps({"layers": layers, "cwd": cwd}).encode()
        # Limits last: this process is still a copy of the host, whose address space may
        # already exceed RLIMIT_AS, so nothing that allocates may follow (nor may the
        # supervisor, which never gets them).
        self._set_limits()
        os.write(self._status_w, status)

    def _set_limits(self) -> None:
        cpu, mem, fsize, nproc, _ = self.limits
        mb = 1024 * 1024
        for res, val in (
            # soft == hard: the kernel's SIGKILL at the limit reaches even a namespace's pid 1
            # (which ignores SIGXCPU); the supervisor's CPU figure names the reason.
            (resource.RLIMIT_CPU, (cpu, cpu)),
            (resource.RLIMIT_AS, (mem * mb, mem * mb)),
            (resource.RLIMIT_FSIZE, (fsize * mb, fsize * mb)),
            (resource.RLIMIT_NPROC, (nproc, nproc)),
            (resource.RLIMIT_CORE, (0, 0)),
            (resource.RLIMIT_NOFILE, (64, 64)),
        ):
            resource.setrlimit(res, val)

    def _supervise(self, child: int) -> None:
        """The first child, outside the new PID namespace: wait, report the status, mirror it."""
        code = 255
        try:
            _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            fd = self._exit_w
            os.closerange(0, fd)  # the host's pipes (and subprocess's error pipe) stay the child's
            os.closerange(fd + 1, 1 << 16)
            os.write(fd, struct.pack("<i", child))  # so the host can kill it, not us, first
            _, status, usage = os.wait4(child, 0)
            cpu_ms = int((usage.ru_utime + usage.ru_stime) * 1000)
            os.write(fd, struct.pack("<ii", status, cpu_ms))
            if os.WIFSIGNALED(status):
                sig = os.WTERMSIG(status)
                if sig not in (signal.SIGKILL, signal.SIGSTOP):
                    signal.signal(sig, signal.SIG_DFL)
                os.kill(os.getpid(), sig)
                code = 128 + sig
            else:
                code = os.waitstatus_to_exitcode(status) & 0xFF
        finally:
            os._exit(code)

    def _unshare(self, is_root: bool) -> bool:
        flags = _CLONE_NEWNS | _CLONE_NEWNET | _CLONE_NEWPID | _CLONE_NEWUTS | _CLONE_NEWIPC
        if _libc.unshare(flags) == 0:
            return True
        if is_root:
            return False
        # Unprivileged: a user namespace first; map only our own uid.
        uid, gid = os.getuid(), os.getgid()
        if _libc.unshare(_CLONE_NEWUSER | flags) != 0:
            return False
        try:
            Path("/proc/self/setgroups").write_text("deny")
            Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
            Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
        except OSError:
            return False
        return True

    def _mounts(self, disk_mb: int) -> bool:
        def mount(src: bytes, target: str, fstype: bytes | None, flags: int, data: str) -> bool:
            return _libc.mount(src, target.encode(), fstype, flags, data.encode() or None) == 0

        if not mount(b"none", "/", None, _MS_REC | _MS_PRIVATE, ""):
            return False
        sec = _MS_NOSUID | _MS_NODEV
        for path in self.hide:
            if not mount(
                b"tmpfs", path, b"tmpfs", sec | _MS_NOEXEC | _MS_RDONLY, "size=4k,mode=555"
            ):
                return False
        mount(b"tmpfs", "/dev/shm", b"tmpfs", sec | _MS_NOEXEC | _MS_RDONLY, "size=4k,mode=555")
        owner = f",uid={self.uid},gid={self.uid}" if self.is_root else ""
        return mount(b"tmpfs", "/tmp", b"tmpfs", sec, f"size={disk_mb}m,mode=700{owner}")

    def read_layers(self) -> list[str]:
        """Call once the child has exec'd: what preexec managed to apply."""
        os.close(self._status_w)
        self._status_w = -1
        if self.cgroup is not None:
            self.cgroup.close_procs()
        try:
            data = os.read(self._status_r, 4096)
        finally:
            os.close(self._status_r)
            self._status_r = -1
        return json.loads(data or b"{}").get("layers", [])

    def close_status(self) -> None:
        """Close whatever pipe ends are still open (each once: fd numbers get reused)."""
        for name in ("_status_w", "_status_r", "_exit_w", "_exit_r", "_guest_fd"):
            fd = getattr(self, name)
            if fd >= 0:
                setattr(self, name, -1)
                try:
                    os.close(fd)
                except OSError:
                    pass

    def started(self) -> None:
        """Call once the child exists: the supervisor alone keeps the exit pipe's write end."""
        os.close(self._exit_w)
        self._exit_w = -1

    def watch_guest(self, layers: list[str]) -> None:
        """After `read_layers`: take a pidfd on the jailed process the supervisor reported."""
        if "pidns" not in layers or self._exit_r < 0:
            return
        data = os.read(self._exit_r, 4)  # written right after the fork, before the child ran
        if len(data) == 4:
            try:
                self._guest_fd = os.pidfd_open(struct.unpack("<i", data)[0])
            except OSError:
                pass

    def kill_guest(self) -> bool:
        """SIGKILL the jailed process (its namespace dies with it, the supervisor then reports
        and exits, so nothing is left a zombie). False when there is no such process."""
        if self._guest_fd < 0:
            return False
        try:
            signal.pidfd_send_signal(self._guest_fd, signal.SIGKILL)
        except OSError:
            return False
        return True

    def exit_status(self) -> tuple[int, float] | None:
        """The jailed process's raw wait status and CPU seconds, as the supervisor saw them
        (None: no report). Call after the supervisor has exited; closes the pipes.
        """
        if self._exit_r < 0:
            return None
        try:
            os.set_blocking(self._exit_r, False)
            data = os.read(self._exit_r, 16)
        except OSError:
            data = b""
        finally:
            self.close_status()
        if len(data) < 8:
            return None
        status, cpu_ms = struct.unpack("<ii", data[:8])
        return status, cpu_ms / 1000

    def cleanup(self, pid: int | None) -> int:
        """Kill the process group and every process left under the run's uid; read the run's
        memory cgroup (peak, OOM kill) and remove it; remove workdir.

        Returns how many stray processes had to be killed outside the process group.
        """
        if pid is not None:
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        strays = 0
        if self.uid >= 0:
            for _ in range(20):
                left = pids_of_uid(self.uid)
                if not left:
                    break
                strays += len(left)
                # By pid from the host: the jailed code cannot fork (seccomp), so the list
                # cannot grow behind our back. (The host's own Python may be unreadable to
                # the run's uid, so nothing is started under that uid to do this.)
                for stray in left:
                    try:
                        os.kill(stray, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
                time.sleep(0.02)
        if self.cgroup is not None:
            self.memory_peak = self.cgroup.peak_bytes()
            self.oom_killed = self.cgroup.oom_killed()
            self.cgroup.remove()
        shutil.rmtree(self.workdir, ignore_errors=True)
        return strays


def _join(procs_fd: int) -> bool:
    """Move the calling process into the cgroup whose `cgroup.procs` is open as `procs_fd`."""
    try:
        return os.write(procs_fd, b"0") == 1
    except OSError:
        return False


def pids_of_uid(uid: int) -> list[int]:
    """Live processes whose real uid is `uid` (zombies excluded)."""
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            status = Path(entry.path, "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("State", "").strip().startswith("Z"):
            continue
        if int(fields.get("Uid", "-1").split()[0]) == uid:
            out.append(int(entry.name))
    return out


def sandbox_pids(uids: set[int] | None = None) -> list[int]:
    """Live (not zombie) processes under a sandbox uid: any, or only `uids` (the selftest
    passes the uids its own runs used, so that other programs' sandboxes do not count)."""
    out = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                uid = entry.stat().st_uid
                state = Path(entry.path, "stat").read_text().rsplit(")", 1)[-1].split()[0]
            except (OSError, IndexError):
                continue
            if state == "Z" or not SANDBOX_UID_MIN <= uid < SANDBOX_UID_MAX:
                continue
            if uids is None or uid in uids:
                out.append(int(entry.name))
    return out
