"""The code sandbox: run LLM-generated Python in a jailed child and report what it did.

This is the package's public surface; the jail (``_jail``, ``_rootfs``, ``_seccomp``,
``_cgroup``), the guest-side runner (``_runner``), the tool channel (``_channel``) and the
host's supervision (``_run``) are internals. ``selftest`` runs the attack corpus (``corpus/``)
for ``sopgraph sandbox selftest``.

Example:
    >>> from sopgraph.nodes.sandbox import SandboxLimits, run_code
    >>> result = await run_code("print(6 * 7)", limits=SandboxLimits(wall_timeout_s=5))
    >>> result.ok, result.stdout
    (True, '42\\n')
"""

from sopgraph.nodes.sandbox._channel import ToolCall, ToolFn
from sopgraph.nodes.sandbox._run import (
    DEFAULT_ALLOWED_IMPORTS,
    DENIED_MODULES,
    TRUNCATION_MARKER,
    SandboxLimits,
    SandboxResult,
    SandboxUnavailable,
    run_code,
)

__all__ = [
    "DEFAULT_ALLOWED_IMPORTS", "DENIED_MODULES", "TRUNCATION_MARKER", "SandboxLimits",
    "SandboxResult", "SandboxUnavailable", "ToolCall", "ToolFn", "run_code",
]  # fmt: skip
