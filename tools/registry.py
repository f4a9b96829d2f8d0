"""The tool registry: versioned compiled tools of one SOP and the manifest that picks one.

Layout: ``<sop dir>/tools/<node id>/v<N>.py`` plus ``<sop dir>/tools/manifest.json``::

    {"sop": "<sop id>", "tools": {"<node id>": {"active": 1, "history": [1],
        "versions": {"1": {"sha256": "...", "author": "human", "train_pass": 0.98,
                           "eval_pass": 0.97, "date": "2026-11-22"}}}}}

Promoting or reverting a version only edits the manifest. A file whose sha256 differs from
the manifest is refused at load, so an edited tool never runs unreviewed.

A hand-written file is registered with ``add_file`` (``sopgraph tools add``), which checks it
against the contract before anything is written. A *development* version (``"dev": true``,
``sopgraph tools add --dev``) is the exception to the checksum: the file is read afresh at each
``resolve``, so a tool being written runs as it is after every edit; it is shown as ``dev``,
never promoted, and registered for real with ``add_file`` once it is done.

Example:
    >>> reg = Registry(Path("examples/service_interruption/tools"))  # doctest: +SKIP
    >>> tool = reg.resolve("obs_station_idle")                          # doctest: +SKIP
    >>> verdict = await tool.fn(ctx.input, ctx)                         # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import yaml

from sopgraph.tools.manifest import (
    Manifest,
    ManifestFile,
    ManifestInvalid,
    ManifestTool,
    ManifestVersion,
    atomic_write,
    sha256_of,
)
from sopgraph.tools.registry_entries import ToolEntry, VersionInfo, entry_of
from sopgraph.tools.registry_errors import (
    RegistryError,
    ToolIntegrityError,
    ToolLoadError,
    ToolMissing,
)
from sopgraph.tools.registry_files import no_tool, nothing_registered, numbers_on_disk, sop_arg
from sopgraph.tools.registry_files import unregistered as unregistered_files
from sopgraph.tools.registry_rules import check_author, check_node_id, promotable, revert_target
from sopgraph.tools.tool_file import LoadedTool, load_tool, model_written, verified_source

# The registry's public face; its errors, entries and the loaded tool are defined beside it.
__all__ = [
    "MANIFEST",
    "LoadedTool",
    "Registry",
    "RegistryError",
    "ToolEntry",
    "ToolIntegrityError",
    "ToolLoadError",
    "ToolMissing",
    "VersionInfo",
]

MANIFEST = "manifest.json"


class Registry:
    """The tools of one SOP. A missing directory is an empty registry.

    The manifest is re-read when its file changes, so a promotion made by another process
    (``sopgraph tools promote``) takes effect at the next ``resolve``.
    """

    def __init__(self, lib_dir: Path, sop_id: str | None = None):
        self.lib_dir = Path(lib_dir)
        self.manifest_path = self.lib_dir / MANIFEST
        self._sop_id = sop_id
        self._lock = threading.RLock()
        self._file = ManifestFile(self.manifest_path)
        self._loaded: dict[tuple[str, int, str, bool], LoadedTool] = {}
        # node -> (the manifest object it was resolved from, the tool): ManifestFile hands out
        # the same object until the file changes, so one stat decides that nothing changed
        self._active: dict[str, tuple[Manifest, LoadedTool]] = {}
        self._files: dict[tuple[str, int], str] = {}

    # -- reading -------------------------------------------------------------------------

    def path_of(self, node_id: str, version: int) -> Path:
        return self.lib_dir / node_id / f"v{version}.py"

    def resolve(self, node_id: str) -> LoadedTool:
        """The node's active tool, loaded once per (node, version, sha256).

        Raises:
            ToolMissing: no entry, no active version, or no file.
            ToolIntegrityError: the file differs from the manifest's sha256.
            ToolLoadError: the file fails to import or breaks the contract.
        """
        with self._lock:
            manifest = self._read()
            hit = self._active.get(node_id)
            if hit is not None and hit[0] is manifest:
                return hit[1]
            entry = manifest.tools.get(node_id)
            if entry is None:
                raise ToolMissing(f"no tool for node '{node_id}' in {self.manifest_path}")
            if entry.active is None:
                raise ToolMissing(
                    f"node '{node_id}' has no active tool version in {self.manifest_path}; "
                    f"run `sopgraph tools promote {node_id} <version>`"
                )
            info = entry.versions.get(str(entry.active))
            if info is None:
                raise ToolMissing(
                    f"node '{node_id}' activates v{entry.active}, which is not registered in "
                    f"{self.manifest_path}; promote a registered version"
                )
            if info.dev:  # the file as it is now, never cached by manifest
                return self._load_dev(node_id, entry.active, info.author)
            tool = self._load(node_id, entry.active, info.sha256, info.author, info.in_process)
            self._active[node_id] = (manifest, tool)
            return tool

    def load(self, node_id: str, info: VersionInfo) -> LoadedTool:
        """A registered version of the node's tool, active or not (a shadow candidate, say).

        Raises:
            ToolMissing: the file is missing.
            ToolIntegrityError: the file differs from ``info.sha256``.
            ToolLoadError: the file fails to import or breaks the contract.
        """
        with self._lock:
            if info.dev:
                return self._load_dev(node_id, info.version, info.author)
            return self._load(node_id, info.version, info.sha256, info.author, info.in_process)

    def has(self, node_id: str) -> bool:
        """Whether the node has an active version whose file exists (integrity not checked)."""
        entry = self._read().tools.get(node_id)
        if entry is None or entry.active is None or str(entry.active) not in entry.versions:
            return False
        file = self._files.get((node_id, entry.active))
        if file is None:
            file = self._files[(node_id, entry.active)] = str(self.path_of(node_id, entry.active))
        return os.path.isfile(file)

    def list(self) -> list[ToolEntry]:
        """Every node in the manifest, by node id."""
        return [entry_of(n, t) for n, t in sorted(self._read().tools.items())]

    def entry(self, node_id: str) -> ToolEntry:
        tool = self._read().tools.get(node_id)
        if tool is None:
            raise ToolMissing(f"no tool for node '{node_id}' in {self.manifest_path}")
        return entry_of(node_id, tool)

    def status(self, node_id: str, version: int) -> str:
        """``ok``, ``modified`` (sha256 differs), ``missing`` (no file) or ``dev`` (a
        development version, whose file runs as it is) for one version."""
        info = self._read().tools[node_id].versions[str(version)]
        path = self.path_of(node_id, version)
        if not path.is_file():
            return "missing"
        if info.dev:
            return "dev"
        return "ok" if sha256_of(path) == info.sha256 else "modified"

    def unregistered(self) -> list[Path]:
        """Version files on disk (``<node>/v<N>.py``) that the manifest does not register."""
        return unregistered_files(self.lib_dir, self._read().tools)

    @property
    def sop_id(self) -> str:
        return self._read().sop or self._default_sop_id()

    # -- writing -------------------------------------------------------------------------

    def add_version(
        self,
        node_id: str,
        code: str,
        author: str,
        train_pass: float | None = None,
        eval_pass: float | None = None,
        activate: bool | None = False,
        reason: str | None = None,
        tokens: int | None = None,
        seconds: float | None = None,
        record_json: str | None = None,
        dev: bool = False,
    ) -> int:
        """Write ``code`` as the node's next version and register it; returns its number.

        Numbers never reuse a file left on disk (for instance by ``remove``). A tool-maker
        version also records its cost and saves ``record_json`` (its make record) beside it
        as ``v<N>.make.json``. ``activate``: ``None`` activates it only when the node has no
        active version yet. ``dev``: a development version (see the module docstring).
        """
        check_node_id(node_id)
        check_author(author)
        with self._write() as m:
            tool = m.tools.setdefault(node_id, ManifestTool())
            on_disk = numbers_on_disk(self.lib_dir / node_id)
            version = max([0, *on_disk, *(int(v) for v in tool.versions)]) + 1
            data = code.encode("utf-8")
            record = None
            if record_json is not None:
                record = f"v{version}.make.json"
                atomic_write(self.lib_dir / node_id / record, record_json.encode("utf-8"))
            atomic_write(self.path_of(node_id, version), data)
            tool.versions[str(version)] = ManifestVersion(
                sha256=hashlib.sha256(data).hexdigest(),
                author=author,
                train_pass=train_pass,
                eval_pass=eval_pass,
                date=dt.datetime.now(dt.UTC).date().isoformat(),
                reason=reason,
                tokens=tokens,
                seconds=seconds,
                record=record,
                dev=dev,
            )
            if activate or (activate is None and tool.active is None):
                tool.activate(version)
        return version

    def add_file(
        self, node_id: str, path: Path, *, dev: bool = False, activate: bool | None = None
    ) -> tuple[int, bool]:
        """Register the hand-written tool at ``path`` as the node's next version (author
        ``human``); returns its number and whether it is active now.

        The file is checked against the contract first, in the sandbox (imported there and
        its ``run`` inspected; its top-level code never runs in this process); a file that
        breaks it registers nothing. ``activate``: ``None``
        activates it only when the node has no active version yet; a development version is
        always activated (it cannot be promoted later).

        Raises:
            ToolMissing: no such file.
            ToolLoadError: the file fails to import or breaks the contract.
        """
        check_node_id(node_id)
        path = Path(path)
        try:
            source = path.read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            raise ToolMissing(f"{path}: no such tool file; give the path of a .py file") from None
        from sopgraph.tools.jailed import check_in_jail  # the sandbox, only when adding

        check_in_jail(path, source, self.lib_dir)
        try:
            code = source.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolLoadError(f"{path}: not UTF-8 text; save the tool as UTF-8") from None
        version = self.add_version(
            node_id, code, "human", activate=True if dev else activate, dev=dev
        )
        return version, self._read().tools[node_id].active == version

    def promote(self, node_id: str, version: int, *, in_process: bool = False) -> None:
        """Make ``version`` the active one (the file must match its sha256). A model-written
        version runs in the sandbox unless ``in_process``: a person read it and lets it run
        in this process (``--in-process``; a hand-written one always does)."""
        with self._write() as m:
            tool = self._tool(m, node_id)
            path = self.path_of(node_id, version)
            info = promotable(tool, node_id, version, in_process, self.lib_dir, path)
            verified_source(path, info.sha256)
            info.in_process = in_process and model_written(info.author)
            tool.activate(version)

    def revert(self, node_id: str) -> int:
        """Go back to the version active before the current one; returns it."""
        with self._write() as m:
            tool = self._tool(m, node_id)
            previous, info = revert_target(tool, node_id)
            if not info.dev:  # a development version was active before: it may be again
                verified_source(self.path_of(node_id, previous), info.sha256)
            tool.history.pop()
            tool.active = previous
            return previous

    def remove(self, node_id: str) -> None:
        """Take the node out of the manifest; its files stay on disk."""
        with self._write() as m:
            self._tool(m, node_id)
            del m.tools[node_id]

    def set_pass_rates(
        self, node_id: str, version: int, train: float | None = None, eval: float | None = None
    ) -> None:
        """Record a version's measured train and held-out pass rates (``None`` keeps a rate)."""
        with self._write() as m:
            info = self._tool(m, node_id).versions.get(str(version))
            if info is None:
                raise ToolMissing(
                    f"node '{node_id}' has no version {version} in {self.manifest_path}"
                )
            if train is not None:
                info.train_pass = train
            if eval is not None:
                info.eval_pass = eval

    def rehash(self, node_id: str | None = None) -> int:
        """Accept the files as they are now: record their sha256 in the manifest; returns how
        many versions it rehashed.

        Raises:
            ToolMissing: a registered file is missing, the node is not registered, or the
                manifest registers nothing (files on disk are named, with how to add them).
        """
        with self._write() as m:
            if node_id is None and not m.tools:
                raise ToolMissing(self._nothing_registered())
            nodes = [node_id] if node_id is not None else list(m.tools)
            for n in nodes:
                tool = self._tool(m, n)
                for v, info in tool.versions.items():
                    path = self.path_of(n, int(v))
                    if not path.is_file():
                        raise ToolMissing(
                            f"cannot rehash {path}: file missing; restore it or "
                            f"`sopgraph tools remove {n}`"
                        )
                    info.sha256 = sha256_of(path)
            return sum(len(self._tool(m, n).versions) for n in nodes)

    # -- internals -----------------------------------------------------------------------

    def _load(
        self, node_id: str, version: int, sha256: str, author: str, in_process: bool = False
    ) -> LoadedTool:
        """The version verified and loaded, once per (node, version, sha256, in-process)."""
        key = (node_id, version, sha256, in_process)
        tool = self._loaded.get(key)
        if tool is None:
            path = self.path_of(node_id, version)
            tool = load_tool(self.lib_dir, node_id, version, sha256, author, path, in_process)
            self._loaded[key] = tool
        return tool

    def _load_dev(self, node_id: str, version: int, author: str) -> LoadedTool:
        """A development version as its file is now (loaded once per content)."""
        path = self.path_of(node_id, version)
        try:
            sha256 = sha256_of(path)
        except FileNotFoundError:
            raise ToolMissing(
                f"development tool file {path} is missing; restore it or register another "
                f"with `sopgraph tools add {self._sop_arg()} {node_id} FILE --dev`"
            ) from None
        return self._load(node_id, version, sha256, author)

    def _sop_arg(self) -> str:
        return sop_arg(self.lib_dir)

    def _nothing_registered(self) -> str:
        return nothing_registered(self.manifest_path, self.lib_dir, self.unregistered())

    def _tool(self, m: Manifest, node_id: str) -> ManifestTool:
        tool = m.tools.get(node_id)
        if tool is None:
            files = [f for f in self.unregistered() if f.parent.name == node_id]
            raise ToolMissing(no_tool(self.manifest_path, self.lib_dir, node_id, m.tools, files))
        return tool

    def _default_sop_id(self) -> str:
        if self._sop_id:
            return self._sop_id
        sop_file = self.lib_dir.parent / "sop.yaml"
        with contextlib.suppress(OSError, yaml.YAMLError, AttributeError):
            sop_id = yaml.safe_load(sop_file.read_text(encoding="utf-8")).get("id")
            if isinstance(sop_id, str):
                return sop_id
        return self.lib_dir.parent.name

    def _read(self) -> Manifest:
        try:
            return self._file.read()
        except ManifestInvalid as exc:
            raise RegistryError(str(exc)) from None

    @contextlib.contextmanager
    def _write(self) -> Iterator[Manifest]:
        try:
            with self._file.update(self._default_sop_id()) as m:
                yield m
        except ManifestInvalid as exc:
            raise RegistryError(str(exc)) from None
