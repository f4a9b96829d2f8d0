"""The compiled-tool contract: what a tool file must define, checked once when it is imported.

A tool file defines ``async def run(input, ctx) -> Verdict``: ``input`` is the run's input as
the SOP's ``input`` contract validated it (a dict: an alarm's ``site`` and ``timestamp``, a
refund's ``order_id``, whatever the SOP declares), ``ctx`` the node's parameters, its parents'
verdicts and the MCP client (``graphs.executors.ToolContext``). Thresholds come from
``ctx.params``, never from literals.

Example:
    >>> run = load_run("_my_tool", Path("tools/obs_x/v1.py"), source)  # doctest: +SKIP
    >>> verdict = await run({"site": "BFI4", "timestamp": "..."}, ctx)  # doctest: +SKIP
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from sopgraph.graphs.model import Verdict

ToolFn = Callable[[dict[str, Any], Any], Awaitable[Verdict]]
SIGNATURE = "async def run(input, ctx) -> Verdict"
# the library (a ``tools/`` folder) whose tool file is being imported: ``spec_of`` binds a
# version of that library, wherever the file being checked lies
LIBRARY: ContextVar[Path | None] = ContextVar("sopgraph_tool_library", default=None)


class ContractError(Exception):
    """A tool file that does not meet the contract; ``str()`` says what and how to fix it."""


def contract_problem(run: Any) -> str | None:
    """Why ``run`` cannot be called as ``await run(input, ctx)``, else None."""
    if run is None:
        return f"does not define `run`; a tool must define `{SIGNATURE}`"
    if not inspect.iscoroutinefunction(run):
        return f"defines a non-async `run`; a tool must define `{SIGNATURE}`"
    try:
        signature = inspect.signature(run)
    except ValueError:
        return f"`run` has no signature Python can read; write `{SIGNATURE}`"
    try:
        signature.bind(None, None)
    except TypeError:
        names = list(signature.parameters)
        if names[:2] == ["site", "timestamp"]:
            return (
                f"`run({', '.join(names)})` is the old alarm-shaped form; write `{SIGNATURE}` "
                "and read input['site'] and input['timestamp']"
            )
        return f"`run({', '.join(names)})` cannot be called as run(input, ctx); write `{SIGNATURE}`"
    return None


def load_run(module_name: str, path: Path, source: bytes, library: Path | None = None) -> ToolFn:
    """Import ``source`` (the bytes that were hashed, not a second read of ``path``) as
    ``module_name`` once per process and return its checked ``run``.

    Raises:
        ContractError: the file fails to import or its ``run`` breaks the contract.
    """
    module = sys.modules.get(module_name)
    if module is None:
        spec = importlib.util.spec_from_file_location(module_name, path)
        assert spec is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        token = LIBRARY.set(library)
        try:
            exec(compile(source, str(path), "exec"), module.__dict__)
        except Exception as exc:
            del sys.modules[module_name]
            raise ContractError(
                f"{path}: cannot import the tool: {type(exc).__name__}: {exc}; "
                "fix the file and register it as a new version"
            ) from exc
        finally:
            LIBRARY.reset(token)
    run: Any = getattr(module, "run", None)
    problem = contract_problem(run)
    if problem:
        raise ContractError(f"{path}: {problem}")
    return run
