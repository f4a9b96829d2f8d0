"""Tool files that run in the sandbox, never in this process: the contract check of ``sopgraph
tools add`` and a model-written version's ``run`` at each call.

The check imports the file in the jail (``nodes/sandbox``) with sopgraph, its packages and the
tool library bound read-only, so the file's top-level code runs there, with no network, no
writable host path and a uid of its own, and only the verdict comes back. A model-written
version (author ``tool-maker:<model>``) runs as the tool-maker's candidates do: the file and
one call in the sandbox, its MCP calls served by the host through ``ctx.mcp``. A spec the
tool-maker filled (``SPEC = {...}`` then ``run = tool(SPEC)``) is data, not code: it is read
as a literal and built here, without running the file.

Example:
    >>> check_in_jail(Path("paid.py"), source, lib)              # doctest: +SKIP
    >>> run = sandboxed("obs_paid", path, source)               # doctest: +SKIP
    >>> verdict = await run(ctx.input, ctx)                      # doctest: +SKIP
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import functools
import json
import os
import secrets
import shutil
import sys
import sysconfig
import tempfile
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from sopgraph.graphs.executors import Refused
from sopgraph.graphs.model import Verdict
from sopgraph.graphs.untrusted_text import printable
from sopgraph.nodes.sandbox import SandboxLimits, SandboxUnavailable, ToolFn, run_code
from sopgraph.tools.contract import ToolFn as RunFn
from sopgraph.tools.jail_harness import harness
from sopgraph.tools.registry_errors import ToolLoadError

# Importing sopgraph and pydantic in a fresh interpreter: a few seconds of CPU on a slow host.
CHECK_LIMITS = SandboxLimits(
    cpu_seconds=30, memory_mb=2048, wall_timeout_s=90, max_tool_calls=0, disk_mb=16
)
RUN_LIMITS = SandboxLimits(cpu_seconds=10, wall_timeout_s=30, max_tool_calls=200)
_LIBRARY_COPY_MAX = 32 * 2**20  # bytes of manifest and version files copied for ``spec_of``
_SELFTEST = "`sopgraph sandbox selftest` names the layer the host refuses"

# Runs in the jail: the host's import paths, then the contract's own loader on the file.
_CHECK = """
import json, sys
_NONCE = {nonce}
if tuple(sys.version_info[:2]) != {version}:
    print(_NONCE + " " + json.dumps({{"sandbox": "its python is " + sys.version.split()[0]}}))
    raise SystemExit(0)
sys.path[:0] = {paths}
import site
for _dir in {sites}:
    site.addsitedir(_dir)
from pathlib import Path
from sopgraph.tools.contract import ContractError, load_run
try:
    load_run("_sopgraph_tool_check", Path({path}), {source}, {library})
    _row = {{"ok": True}}
except ContractError as _exc:
    _row = {{"problem": str(_exc)}}
print(_NONCE + " " + json.dumps(_row), flush=True)
"""


def check_in_jail(path: Path, source: bytes, library: Path | None = None) -> None:
    """Import ``source`` in the sandbox and check its ``run`` against the contract.

    Raises:
        ToolLoadError: the file fails to import or breaks the contract, or the sandbox is
            unavailable (the file is then not run at all).
    """
    paths, sites = _import_paths()
    nonce = secrets.token_hex(8)
    try:
        with _readable_copy(library) as lib:
            program = _CHECK.format(
                nonce=repr(nonce), version=repr(tuple(sys.version_info[:2])),
                paths=repr(list(paths)), sites=repr(list(sites)), path=repr(str(path)),
                source=repr(source), library=f"Path({lib!r})" if lib else "None",
            )  # fmt: skip
            binds = tuple(sorted({*paths, *([lib] if lib else [])}))
            result = await_sync(
                run_code(program, None, CHECK_LIMITS, python_guard=False, libraries=binds)
            )
    except SandboxUnavailable as exc:
        raise ToolLoadError(
            f"{path}: not checked: the contract check runs the file only in the sandbox, "
            f"which this host refuses ({exc}); {_SELFTEST}"
        ) from None
    row = _row(result.stdout, nonce)
    if row is not None and "sandbox" in row:
        raise ToolLoadError(
            f"{path}: not checked: the sandbox's python ({row['sandbox']}) is not sopgraph's "
            f"{sys.version.split()[0]}; run sopgraph on a python {sys.version_info[0]}."
            f"{sys.version_info[1]} the sandbox can use (/usr/bin/python3)"
        )
    if row is not None and "problem" in row:
        message = printable(row["problem"]).replace("register it as a new version", "add it again")
        if lib and library is not None:  # the library as the user knows it, not its copy
            message = message.replace(lib, str(library))
        raise ToolLoadError(message)
    if row is None or not row.get("ok"):
        why = result.reason or "it ended without a result"
        detail = (result.error or "").strip().splitlines()
        if detail and detail[-1] not in why:
            why = f"{why}: {detail[-1][:300]}"
        raise ToolLoadError(
            f"{path}: cannot import the tool in the sandbox: {printable(why)}; "
            "fix the file and add it again"
        )


def sandboxed(node_id: str, path: Path, source: bytes) -> RunFn:
    """``run(input, ctx)`` for a model-written version: each call runs the file in the sandbox.

    Raises (when called):
        SandboxedToolError: the sandbox stopped the tool, it raised, or the sandbox is
            unavailable; as any exception of a tool, the node falls back to the next executor.
        Refused: a data server refused the run's identity (the node ends ``refused``).
    """
    code = source.decode("utf-8")

    async def run(input: dict[str, Any], ctx: Any) -> Verdict:
        parents = getattr(ctx, "parents", None) or {}
        case = _plain({
            "input": input, "params": getattr(ctx, "params", None) or {},
            "node_id": getattr(ctx, "node_id", node_id), "text": getattr(ctx, "text", ""),
            "parents": {k: v.model_dump() if isinstance(v, Verdict) else v
                        for k, v in parents.items()},
        })  # fmt: skip
        tools = McpTools(getattr(ctx, "mcp", None))
        nonce = secrets.token_hex(8)
        try:
            result = await run_code(harness(code, [case], nonce), tools, RUN_LIMITS)
        except SandboxUnavailable as exc:
            raise SandboxedToolError(
                f"{path}: a model-written tool runs only in the sandbox, which this host "
                f"refuses ({exc}); {_SELFTEST}, or promote the version with --in-process"
            ) from None
        if tools.refused is not None:
            raise tools.refused
        row = _row(result.stdout, nonce)
        if not result.ok or row is None:
            why = result.reason or "it ended without a verdict"
            raise SandboxedToolError(f"{path}: the sandbox stopped the tool: {printable(why)}")
        if row.get("error"):
            raise SandboxedToolError(f"{path}: {printable(row['error'])} (run in the sandbox)")
        fields = ("value", "observed", "threshold", "explanation")
        return Verdict.model_validate({k: row[k] for k in fields if row.get(k) is not None})

    run.sandboxed = True  # type: ignore[attr-defined]
    return run


class SandboxedToolError(Exception):
    """A model-written tool that did not reach a verdict in the sandbox; ``str()`` says why."""


class McpTools(Mapping[str, ToolFn]):
    """The sandbox's tools for a run-time call: any ``"<server>.<tool>"`` name, forwarded to
    ``ctx.mcp``, which applies the run's own limits (its identity, read-only deciding)."""

    def __init__(self, mcp: Any):
        self.mcp = mcp
        self.refused: Refused | None = None

    def __contains__(self, name: object) -> bool:
        server, _, tool = str(name).partition(".")
        return self.mcp is not None and bool(server) and bool(tool)

    def __getitem__(self, name: str) -> ToolFn:
        if name not in self:
            raise KeyError(name)
        server, _, tool = name.partition(".")

        async def call(args: dict[str, Any]) -> Any:
            try:
                return await self.mcp.call(server, tool, args)
            except Refused as exc:  # kept: the node ends refused, whatever the tool does next
                self.refused = exc
                raise

        return call

    def __iter__(self) -> Iterator[str]:
        return iter(())  # none is offered by name: the tool calls ctx.mcp.call(server, tool)

    def __len__(self) -> int:
        return 0

    def __bool__(self) -> bool:  # offered, though none by name (``run_code`` drops an empty one)
        return True


def model_tool(node_id: str, path: Path, source: bytes) -> tuple[RunFn, bool]:
    """A model-written version's ``run``, none of its code run here: built from its spec
    literal, else each call run in the sandbox; and whether it is the sandbox's.

    Raises:
        ToolLoadError: the spec does not load, or the file is not UTF-8.
    """
    from sopgraph.tools.spec.model import SpecError
    from sopgraph.tools.spec.run import tool  # the builder only: not spec_of, which reads the store

    spec = spec_data(source)
    if spec is not None:
        try:
            return tool(spec), False
        except (SpecError, ValueError, TypeError) as exc:
            raise ToolLoadError(f"{path}: the tool-maker's spec does not load: {exc}") from None
    try:
        return sandboxed(node_id, path, source), True
    except UnicodeDecodeError:
        raise ToolLoadError(f"{path}: not UTF-8 text; the tool-maker writes UTF-8") from None


def spec_data(source: bytes) -> Any:
    """The literal of a tool-maker spec file (docstring, ``from sopgraph.tools.spec import
    tool``, ``SPEC = <literal>``, ``run = tool(SPEC)`` and nothing else), else None."""
    try:
        body = ast.parse(source).body
    except (SyntaxError, ValueError):
        return None
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    if len(body) != 3:
        return None
    imp, spec, run = body
    shape = (
        isinstance(imp, ast.ImportFrom) and imp.module == "sopgraph.tools.spec" and imp.level == 0
        and [(a.name, a.asname) for a in imp.names] == [("tool", None)]
        and _assigns(spec, "SPEC") and _assigns(run, "run")
        and ast.dump(run.value) == ast.dump(ast.parse("tool(SPEC)", mode="eval").body)  # type: ignore[attr-defined]
    )  # fmt: skip
    if not shape:
        return None
    try:
        return ast.literal_eval(spec.value)  # type: ignore[attr-defined]
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return None


def _assigns(stmt: ast.stmt, name: str) -> bool:
    return (
        isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == name
    )  # fmt: skip


@contextlib.contextmanager
def _readable_copy(library: Path | None) -> Iterator[str | None]:
    """A copy of the library's manifest and version files that the sandbox's uid may read
    (the manifest is written private), for ``spec_of`` in the checked file; None without one."""
    files = sorted(library.glob("*/v*.py")) if library is not None and library.is_dir() else []
    manifest = library / "manifest.json" if library is not None else None
    if manifest is None or not manifest.is_file():
        yield None
        return
    root = Path(tempfile.mkdtemp(prefix="sopgraph-library-"))
    try:
        root.chmod(0o755)
        size = 0
        for file in [manifest, *files]:
            size += file.stat().st_size
            if size > _LIBRARY_COPY_MAX:
                break  # a library this large keeps its versions out of the check
            target = root / file.relative_to(library)  # type: ignore[arg-type]
            target.parent.mkdir(mode=0o755, exist_ok=True)
            shutil.copyfile(file, target)
            target.chmod(0o644)
        yield str(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@functools.cache
def _import_paths() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Where this process imports from beyond the stdlib (site-packages, the checkout of an
    editable install), and which of them are site directories (their ``.pth`` files count)."""
    import sopgraph.tools

    config = sysconfig.get_paths()
    # the stdlib and its extensions are the sandbox interpreter's own (a venv's platstdlib
    # holds its site-packages, so it is not one of them)
    stdlib = {os.path.realpath(config["stdlib"]), os.path.dirname(os.path.realpath(os.__file__))}
    sites = {os.path.realpath(config[k]) for k in ("purelib", "platlib")}
    # the folder holding sopgraph's packages: site-packages, or the checkout of an editable
    # install, whose package folders are bound one by one: the checkout itself may be closed to
    # the sandbox's uid (a clone in a `mktemp -d` folder is mode 700), and a bound folder keeps
    # its mode, so nothing below it could be reached
    holder = str(Path(sopgraph.tools.__file__).resolve().parents[1])
    packages = [holder] if holder in sites else _package_folders(Path(holder))
    found = set(packages)
    for entry in sys.path:
        real = os.path.realpath(entry) if entry else ""
        if real and os.path.isdir(real) and not any(_within(real, s) for s in stdlib):
            found.add(real)
    if holder not in sites:
        found.discard(holder)
    return tuple(sorted(found)), tuple(sorted(s for s in sites if s in found))


def _package_folders(checkout: Path) -> list[str]:
    """The folders of an editable checkout that sopgraph's packages are imported from."""
    import importlib.util

    out = []
    for folder in sorted(checkout.iterdir()):
        if not (folder / "__init__.py").is_file():
            continue
        name = "sopgraph" if folder.name == "sopgraph" else f"sopgraph.{folder.name}"
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None and str(folder) in (spec.submodule_search_locations or []):
            out.append(str(folder))
    return out


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder + os.sep)


def _row(stdout: str, nonce: str) -> dict[str, Any] | None:
    for line in stdout.splitlines():
        if line.startswith(nonce + " "):
            try:
                row = json.loads(line[len(nonce) + 1 :])
            except ValueError:
                return None
            return row if isinstance(row, dict) else None
    return None


def _plain(value: Any) -> Any:
    """``value`` as JSON data (a datetime as its text), as the sandbox receives it."""
    return json.loads(json.dumps(value, default=str))


def await_sync(coro: Any) -> Any:
    """Run ``coro`` to the end from synchronous code, in a thread when a loop is running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()
