"""Errors a user can cause, printed as one ``error:`` line each (exit 2), never a traceback."""

from __future__ import annotations

import sys

from sopgraph.graphs.loader import SopError


class UserError(Exception):
    """A mistake the user can fix; printed as one ``error:`` line, exit 2."""


# Exceptions a user can cause, by module. Only modules already imported are consulted: an
# exception class whose module was never loaded cannot have been raised, and importing the
# engine just to name its errors would slow every command down.
_USER_ERRORS = {
    "sopgraph.runtime.runner": ("InputError",),
    "sopgraph.nodes.mcp": ("McpError",),
    "sopgraph.tools.registry": ("RegistryError",),
    "sopgraph.nodes.models": ("SettingsError",),
    "sopgraph.nodes.models._model_proxy": ("CassetteError",),
    "sopgraph.graphs.telemetry": ("TelemetryError",),
    "sopgraph.graphs.drawing": ("DrawingError",),
    "sopgraph.graphs.approval": ("DecisionError",),
    "sopgraph.mcp_servers.server_auth": ("TokenError",),
}


def user_errors() -> tuple[type[BaseException], ...]:
    """The exception classes that mean a user's mistake, among the modules loaded so far."""
    errors: list[type[BaseException]] = [SopError, UserError]
    for module, names in _USER_ERRORS.items():
        loaded = sys.modules.get(module)
        errors += [getattr(loaded, n) for n in names if loaded is not None and hasattr(loaded, n)]
    return tuple(errors)


def print_user_error(exc: BaseException) -> None:
    """Each line of the message as ``error: …`` on stderr."""
    from sopgraph.graphs.untrusted_text import printable

    # an MCP server's or a model's words may be quoted in the message
    for line in str(exc).splitlines() or [type(exc).__name__]:
        line = printable(line)
        print(line if line.startswith("error:") else f"error: {line}", file=sys.stderr)
