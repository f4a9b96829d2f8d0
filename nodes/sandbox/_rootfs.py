"""The sandbox's minimal root filesystem: only the interpreter, its stdlib and libraries.

The plan is computed once in the host (`rootfs_plan`) and applied in the jailed child between
fork and exec (`apply_plan`): a small tmpfs becomes the new root, the few host paths the
interpreter needs are bind-mounted into it read-only (symlink chains such as `/lib64 ->
usr/lib64` are recreated, not followed), `/dev` holds five character devices, `/tmp` is the
run's size-limited tmpfs, and `pivot_root` detaches the host's tree. A fresh `/proc` is
mounted afterwards, inside the run's own PID namespace.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import json
import os
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 0x4000, 1 << 18
_MNT_DETACH = 2
_SYS_PIVOT_ROOT = 155  # x86_64; other architectures fall back to the hiding mounts
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
SANDBOX_CWD = "/tmp/sandbox"

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)

# What the chosen interpreter reports about itself (stdlib, dynamic modules, zoneinfo).
# What the chosen interpreter reports about itself (stdlib, libraries) and which extension
# modules the runner and the allowed imports load: the only ones the guest's root will hold.
_FACTS = (
    "import json, os, sys, sysconfig\n"
    "for name in json.loads(sys.argv[1]):\n"
    "    try:\n"
    "        __import__(name)\n"
    "    except ImportError:\n"
    "        pass\n"
    "print(json.dumps({'stdlib': os.path.dirname(os.__file__),"
    " 'libdir': sysconfig.get_config_var('LIBDIR') or '',"
    " 'multiarch': getattr(sys.implementation, '_multiarch', '') or '',"
    " 'extensions': sorted(m.__file__ for m in list(sys.modules.values())"
    "  if (getattr(m, '__file__', None) or '').endswith('.so'))}))"
)
# Extension modules the codec machinery loads on behalf of any code (`.encode('shift_jis')`).
_CODEC_EXTENSIONS = ("_codecs_", "_multibytecodec")
# What the runner itself imports besides the allowed modules.
RUNNER_IMPORTS = ("json", "signal", "errno", "traceback", "linecache", "_strptime")


@dataclass(frozen=True)
class RootfsPlan:
    """Operations that build the new root: ("dir", p), ("link", p, target), ("bind", p, kind)."""

    program: str  # the interpreter's real path, valid inside the new root
    ops: tuple[tuple[str, ...], ...]


def elf_interpreter(binary: str) -> str | None:
    """The dynamic loader named in an ELF64 binary's PT_INTERP header, if any."""
    try:
        with open(binary, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2:
                return None
            phoff, = struct.unpack_from("<Q", head, 0x20)  # fmt: skip
            phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
            for i in range(phnum):
                p_type, = struct.unpack_from("<I", table, i * phentsize)  # fmt: skip
                if p_type == 3:  # PT_INTERP
                    offset, = struct.unpack_from("<Q", table, i * phentsize + 8)  # fmt: skip
                    size, = struct.unpack_from("<Q", table, i * phentsize + 32)  # fmt: skip
                    f.seek(offset)
                    return f.read(size).rstrip(b"\0").decode()
    except (OSError, struct.error, UnicodeDecodeError):
        return None
    return None


@functools.lru_cache(maxsize=8)
def rootfs_plan(
    interpreter: str, imports: tuple[str, ...] = (), libraries: tuple[str, ...] = ()
) -> RootfsPlan | None:
    """The bind mounts and symlinks `interpreter` needs to start and import `imports`.

    The stdlib's pure-Python part is bound whole (read-only source); its directory of C
    extension modules is replaced by a tmpfs holding only the extensions those imports load,
    so that `_sqlite3`, `_ctypes`, `_ssl`, `readline` ... cannot be loaded by any route.
    `libraries` (host directories such as site-packages) are bound read-only at their own
    paths; with them the extension directory is bound whole, since their packages load
    extensions no allow-list names (a run that needs them has no Python-level guard).
    """
    program = os.path.realpath(interpreter)
    wanted = json.dumps(sorted({*imports, *RUNNER_IMPORTS}))
    try:
        out = subprocess.run(
            [program, "-I", "-S", "-c", _FACTS, wanted],
            capture_output=True, timeout=20, check=True, env={},
        ).stdout  # fmt: skip
        facts = json.loads(out)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    needed = []
    for lib in (facts["libdir"], f"/usr/lib/{facts['multiarch']}", f"/lib/{facts['multiarch']}"):
        if facts["multiarch"] or lib == facts["libdir"]:
            needed.append(lib)
    needed += [elf_interpreter(program) or "", program, facts["stdlib"]]
    needed.append("/usr/share/zoneinfo")  # zoneinfo (an allowed import) reads it
    builder = _Builder()
    # a library at the run's /tmp or above it (`python -m` run from /tmp puts /tmp on the
    # import path) would cover the run's /tmp and its working directory: it is not bound
    kept = [lib for lib in libraries if not _holds(lib, SANDBOX_CWD)]
    for path in [*needed, *kept]:
        if path and os.path.exists(path):
            builder.replicate(path)
    dynload = os.path.join(facts["stdlib"], "lib-dynload")
    if os.path.isdir(dynload) and not libraries:
        keep = {os.path.realpath(f) for f in facts["extensions"]}
        keep |= {e.path for e in os.scandir(dynload) if e.name.startswith(_CODEC_EXTENSIONS)}
        builder.ops.append(("tmpfs", dynload))
        for path in sorted(keep):
            if os.path.dirname(path) == dynload:
                builder.ops.append(("bind", path, "file"))
        builder.ops.append(("seal", dynload))
    builder.ops += [("dir", "/dev")] + [("bind", d, "dev") for d in _DEVICES if os.path.exists(d)]
    builder.ops += [("dir", "/tmp"), ("dir", "/proc"), ("dir", "/etc")]
    return RootfsPlan(program=program, ops=tuple(builder.ops))


def _holds(folder: str, path: str) -> bool:
    """Whether ``path`` lies in ``folder`` (or is it)."""
    folder = os.path.realpath(folder)
    return os.path.commonpath([folder, path]) == folder


class _Builder:
    """Recreates each host path's chain of directories and symlinks; binds the real leaves."""

    def __init__(self) -> None:
        self.ops: list[tuple[str, ...]] = []
        self.dirs: set[str] = {"/"}
        self.links: set[str] = set()
        self.binds: set[str] = set()

    def replicate(self, path: str, depth: int = 0) -> None:
        if depth > 20:
            return
        cur = "/"
        parts = Path(path).parts[1:]
        for i, comp in enumerate(parts):
            nxt = os.path.join(cur, comp)
            if nxt in self.binds:
                return  # already visible through a bound ancestor
            if os.path.islink(nxt):
                target = os.readlink(nxt)
                if nxt not in self.links:
                    self.links.add(nxt)
                    self.ops.append(("link", nxt, target))
                rest = os.path.join(os.path.join(cur, target), *parts[i + 1 :])
                self.replicate(os.path.normpath(rest), depth + 1)
                return
            if i == len(parts) - 1:
                self.binds.add(nxt)
                self.ops.append(("bind", nxt, "dir" if os.path.isdir(nxt) else "file"))
            elif nxt not in self.dirs:
                self.dirs.add(nxt)
                self.ops.append(("dir", nxt))
            cur = nxt


def _mount(src: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> bool:
    return (
        _libc.mount(
            src.encode() if src else None,
            target.encode(),
            fstype.encode() if fstype else None,
            flags,
            data.encode() or None,
        )
        == 0
    )


def apply_plan(plan: RootfsPlan, mountpoint: str, disk_mb: int, owner: int) -> bool:
    """In the child, in its own mount namespace: build the root at `mountpoint` and pivot.

    `owner` (>= 0) owns the working directory. Returns False when a step failed; the caller
    then falls back to hiding mounts over the host tree.
    """
    sec = _MS_NOSUID | _MS_NODEV
    if not _mount(None, "/", None, _MS_REC | _MS_PRIVATE):
        return False
    if not _mount("tmpfs", mountpoint, "tmpfs", sec, "size=1m,mode=755"):
        return False
    # The run's /tmp first: a library bound under /tmp (a test's SOP folder) lies on top of it.
    tmp_owner = f",uid={owner},gid={owner}" if owner >= 0 else ""
    os.mkdir(mountpoint + "/tmp", 0o755)
    if not _mount(
        "tmpfs", mountpoint + "/tmp", "tmpfs", sec, f"size={disk_mb}m,mode=700{tmp_owner}"
    ):
        return False
    for op in plan.ops:
        target = mountpoint + op[1]
        if op[0] == "tmpfs":
            if not _mount("tmpfs", target, "tmpfs", sec, "size=64k,mode=755"):
                return False
        elif op[0] == "seal":
            if not _mount(None, target, None, _MS_REMOUNT | _MS_RDONLY | sec, "size=64k,mode=755"):
                return False
        elif op[0] == "dir":
            os.makedirs(target, 0o755, exist_ok=True)
        elif op[0] == "link":
            os.symlink(op[2], target)
        else:
            if op[2] == "dir":
                os.makedirs(target, 0o755, exist_ok=True)
            else:
                os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
            if not _mount(op[1], target, None, _MS_BIND | _MS_REC):
                return False
            ro = _MS_NOSUID if op[2] == "dev" else sec | _MS_RDONLY
            if not _mount(None, target, None, _MS_BIND | _MS_REMOUNT | ro):
                return False
    os.mkdir(mountpoint + SANDBOX_CWD, 0o700)
    if owner >= 0:
        os.chown(mountpoint + SANDBOX_CWD, owner, owner)
    old = mountpoint + "/.old"
    os.mkdir(old, 0o700)
    if _libc.syscall(_SYS_PIVOT_ROOT, mountpoint.encode(), old.encode()) != 0:
        return False
    os.chdir("/")
    # Past the pivot there is no falling back: the host's tree must go, or the run does.
    if _libc.umount2(b"/.old", _MNT_DETACH) != 0:
        os._exit(97)
    os.rmdir("/.old")
    # The new root itself becomes read-only: nothing can be planted next to the binds.
    if not _mount("tmpfs", "/", "tmpfs", _MS_REMOUNT | _MS_RDONLY | sec, "size=1m,mode=755"):
        os._exit(97)
    return True


def mount_proc() -> bool:
    """A procfs for the child's own PID namespace (it lists only the run's processes)."""
    return _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
