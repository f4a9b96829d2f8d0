"""The sandbox's seccomp filter: which system calls fail, which kill, and whom signals reach.

Built in the forked child (it needs the child's pid) and installed by the jail before exec.
x86_64 only; elsewhere the jail reports the layer as missing.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

_CLONE_THREAD = 0x00010000

# x86_64 syscalls that fail with an errno, so that ordinary code gets a clear error.
_X86_64_DENY = {
    41: errno.EACCES,  # socket
    57: errno.EAGAIN,  # fork
    58: errno.EAGAIN,  # vfork
    435: errno.ENOSYS,  # clone3 (glibc falls back to clone, whose flags we can inspect)
}
# x86_64 syscalls no sandboxed program has a use for: the process is killed (SIGSYS), which
# the host sees in the wait status, a record the guest cannot rewrite.
_X86_64_KILL = (
    101, 165, 166, 272, 308, 155, 161,  # ptrace, mount, umount2, unshare, setns, pivot_root, chroot
    321, 298, 323, 248, 249, 250,  # bpf, perf_event_open, userfaultfd, add_key, request_key, keyctl
    310, 311, 425, 426, 427,  # process_vm_readv/writev, io_uring_setup/enter/register
    246, 320, 175, 313, 176, 169,  # kexec_load, kexec_file_load, (f)init/delete_module, reboot
    167, 168, 303, 304, 170, 171,  # swapon/off, name_to/open_by_handle_at, set host/domain name
    159, 164, 227, 163, 172, 173,  # adjtimex, settimeofday, clock_settime, acct, iopl, ioperm
    428, 429, 430, 431, 432, 433, 442,  # new mount API: open_tree ... fspick, mount_setattr
)  # fmt: skip
# Anonymous in-memory files: their pages are counted by no rlimit (only RLIMIT_FSIZE per file,
# times RLIMIT_NOFILE files: about 1 GB), so they are denied where no memory cgroup counts them.
_X86_64_MEMFD = (319, 447)  # memfd_create, memfd_secret
_X86_64_CLONE = 56
_AUDIT_ARCH_X86_64 = 0xC000003E


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


# Signals may only go to the child itself (pid) or its own process group (0): without this a
# sandbox sharing the host's uid (no root, so no uid drop) could kill its parent.
_X86_64_SIGNAL = (62, 200, 234, 129, 297)  # kill, tkill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo
_X86_64_DENY_PIDFD = (424, 434)  # pidfd_send_signal, pidfd_open


def seccomp_program(pid: int, deny_memfd: bool = True) -> _Prog | None:
    """The BPF filter for the child `pid`; built in the forked child, before exec.

    `deny_memfd`: make `memfd_create` fail with EPERM (the jail passes False when the run's
    memory cgroup counts and caps what a memfd holds).
    """
    if platform.machine() != "x86_64":
        return None
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    allow, kill = 0x7FFF0000, 0x80000000

    def err(code: int) -> int:
        return 0x00050000 | code

    ins = [
        (ld, 0, 0, 4),  # seccomp_data.arch
        (jeq, 1, 0, _AUDIT_ARCH_X86_64),
        (ret, 0, 0, kill),
        (ld, 0, 0, 0),  # seccomp_data.nr
        (jge, 0, 1, 0x40000000),  # x32 ABI
        (ret, 0, 0, err(errno.EPERM)),
        (jeq, 0, 4, _X86_64_CLONE),
        (ld, 0, 0, 16),  # args[0] low word: clone flags
        (jset, 0, 1, _CLONE_THREAD),
        (ret, 0, 0, allow),  # a thread
        (ret, 0, 0, err(errno.EAGAIN)),  # a new process
    ]
    deny = list(_X86_64_DENY.items())
    if deny_memfd:
        deny += [(nr, errno.EPERM) for nr in _X86_64_MEMFD]
    for nr, code in deny:
        ins += [(jeq, 0, 1, nr), (ret, 0, 0, err(code))]
    for nr in _X86_64_KILL:
        ins += [(jeq, 0, 1, nr), (ret, 0, 0, kill)]
    for nr in _X86_64_DENY_PIDFD:
        ins += [(jeq, 0, 1, nr), (ret, 0, 0, err(errno.EPERM))]
    for nr in _X86_64_SIGNAL:
        ins += [
            (jeq, 0, 5, nr),
            (ld, 0, 0, 16),  # args[0] low word: target pid
            (jeq, 2, 0, pid),
            (jeq, 1, 0, 0),
            (ret, 0, 0, err(errno.EPERM)),
            (ret, 0, 0, allow),
        ]
    ins.append((ret, 0, 0, allow))
    raw = b"".join(struct.pack("HBBI", *i) for i in ins)
    buf = ctypes.create_string_buffer(raw, len(raw))

    prog = _Prog(len(ins), ctypes.addressof(buf))
    prog._buf = buf  # keep the instructions alive with the program
    return prog
