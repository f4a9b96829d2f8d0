"""A memory cgroup per sandboxed run: caps and counts all it holds, kernel-held memory included.

RLIMIT_AS bounds the guest's address space, not what the kernel holds for it: `memfd` and
tmpfs pages, pipe buffers, page tables. A memory cgroup charges all of that to the run. The
host makes one per run under its own cgroup (cgroup v1's `memory` controller, or a v2
hierarchy where `memory` can be enabled for children), the jailed process joins it before it
runs anything, and the host reads the peak and the OOM-kill count after the run, then removes
it. Where none can be made (not root, no memory controller, a v2 cgroup that holds processes
itself), `MemoryCgroup.create` returns None and the jail falls back to denying `memfd_create`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

_LIVE: set[MemoryCgroup] = set()  # cgroups of runs in progress (the selftest samples them)


def own_memory_cgroup() -> tuple[Path, int] | None:
    """The directory of this process's memory cgroup and the cgroup version, if any."""
    try:
        membership = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    v1 = v2 = None
    for line in membership:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            v1 = path
        elif controllers == "":
            v2 = path
    for line in mounts:
        fields, _, tail = line.partition(" - ")
        fstype, _, options = (tail.split() + ["", "", ""])[:3]
        root, mountpoint = fields.split()[3:5]
        if fstype == "cgroup" and v1 is not None and "memory" in options.split(","):
            return _under(mountpoint, root, v1), 1
        if fstype == "cgroup2" and v2 is not None and v1 is None:
            return _under(mountpoint, root, v2), 2
    return None


def _under(mountpoint: str, root: str, path: str) -> Path:
    rel = path[len(root) :] if root != "/" and path.startswith(root) else path
    return Path(mountpoint) / rel.lstrip("/")


class MemoryCgroup:
    """One run's memory cgroup: `procs_fd` is what the jailed child writes "0" to, to join."""

    def __init__(self, path: Path, version: int, limit_bytes: int, procs_fd: int) -> None:
        self.path, self.version, self.limit_bytes = path, version, limit_bytes
        self.procs_fd = procs_fd

    @classmethod
    def create(cls, name: str, limit_bytes: int) -> MemoryCgroup | None:
        """A fresh cgroup `name` under this process's own, capped at `limit_bytes` (None when
        the host offers none: the caller then closes the holes another way)."""
        if os.geteuid() != 0:
            return None
        own = own_memory_cgroup()
        if own is None:
            return None
        parent, version = own
        if version == 2 and not _enable_memory(parent):
            return None
        path = parent / name
        try:
            path.mkdir()
        except OSError:
            return None
        try:
            if version == 1:
                (path / "memory.limit_in_bytes").write_text(str(limit_bytes))
                _try_write(path / "memory.memsw.limit_in_bytes", str(limit_bytes))
            else:
                (path / "memory.max").write_text(str(limit_bytes))
                _try_write(path / "memory.swap.max", "0")
            fd = os.open(path / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            _rmdir(path)
            return None
        group = cls(path, version, limit_bytes, fd)
        _LIVE.add(group)
        return group

    def close_procs(self) -> None:
        """The child has joined (or failed to): the host needs the file no more."""
        if self.procs_fd >= 0:
            os.close(self.procs_fd)
            self.procs_fd = -1

    def usage_bytes(self) -> int:
        name = "memory.usage_in_bytes" if self.version == 1 else "memory.current"
        return _read_int(self.path / name)

    def peak_bytes(self) -> int:
        """The most the run held at once: its processes, page cache, tmpfs, memfd, kernel."""
        if self.version == 1:
            return _read_int(self.path / "memory.max_usage_in_bytes")
        return _read_int(self.path / "memory.peak") or self.usage_bytes()

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of the run for reaching the limit."""
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        try:
            lines = (self.path / name).read_text().splitlines()
        except OSError:
            return False
        counts = dict((ln.split() + ["0"])[:2] for ln in lines)
        return counts.get("oom_kill", "0") not in ("0", "")

    def remove(self) -> None:
        """Call once the run's processes are gone (their exit leaves the cgroup a moment later)."""
        self.close_procs()
        _LIVE.discard(self)
        _rmdir(self.path)


def live_usage_bytes() -> int:
    """What every run in progress holds now, kernel-held memory included."""
    return sum(group.usage_bytes() for group in list(_LIVE))


def _enable_memory(parent: Path) -> bool:
    try:
        if "memory" in (parent / "cgroup.subtree_control").read_text().split():
            return True
        # Refused (EBUSY) when the parent holds processes itself and is not the root.
        (parent / "cgroup.subtree_control").write_text("+memory")
        return True
    except OSError:
        return False


def _try_write(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError:
        pass  # no swap accounting on this host: nothing to cap


def _read_int(path: Path) -> int:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def _rmdir(path: Path) -> None:
    for _ in range(50):  # EBUSY while the last exiting task is still being torn down
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)
