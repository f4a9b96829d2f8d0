"""The tool registry: versioned compiled tools of one SOP and the manifest that picks one.

Layout: ``<sop dir>/tools/<node id>/v<N>.py`` plus ``<sop dir>/tools/manifest.json``::

    {"sop": "<sop id>", "tools": {"<node id>": {"active": 1, "history": [1],
        "versions": {"1": {"sha256": "...", "author": "human", "train_pass": 0.98,
                           "eval_pass": 0.97, "date": "2026-11-22"}}}}}

Promoting or reverting a version only edits the manifest. A file whose sha256 differs from
the manifest is refused at load, so an edited tool never runs unreviewed.

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
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
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
from sopgraph.tools.registry_errors import (
    RegistryError,
    ToolIntegrityError,
    ToolLoadError,
    ToolMissing,
)
from sopgraph.tools.tool_file import LoadedTool, load_tool, verified_source

# The registry's public face; its errors and the loaded tool are defined below it.
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
_NODE_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_VERSION_FILE = re.compile(r"^v(\d+)\.(?:py|make\.json)$")


@dataclass(frozen=True)
class VersionInfo:
    """One registered version of a node's tool."""

    version: int
    sha256: str
    author: str
    train_pass: float | None
    eval_pass: float | None
    date: str
    tokens: int | None = None
    seconds: float | None = None
    record: str | None = None


@dataclass(frozen=True)
class ToolEntry:
    """A node's manifest entry: its active version and every registered version."""

    node_id: str
    active: int | None
    versions: list[VersionInfo]
    history: list[int]

    def version(self, n: int) -> VersionInfo | None:
        return next((v for v in self.versions if v.version == n), None)


def _check_author(author: str) -> None:
    if author != "human" and not (author.startswith("tool-maker:") and len(author) > 11):
        raise RegistryError(f"author '{author}' is not valid; use 'human' or 'tool-maker:<model>'")


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
        self._loaded: dict[tuple[str, int, str], LoadedTool] = {}
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
            tool = self._load(node_id, entry.active, info.sha256, info.author)
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
            return self._load(node_id, info.version, info.sha256, info.author)

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
        return [self._entry(n, t) for n, t in sorted(self._read().tools.items())]

    def entry(self, node_id: str) -> ToolEntry:
        tool = self._read().tools.get(node_id)
        if tool is None:
            raise ToolMissing(f"no tool for node '{node_id}' in {self.manifest_path}")
        return self._entry(node_id, tool)

    def status(self, node_id: str, version: int) -> str:
        """``ok``, ``modified`` (sha256 differs) or ``missing`` (no file) for one version."""
        info = self._read().tools[node_id].versions[str(version)]
        path = self.path_of(node_id, version)
        if not path.is_file():
            return "missing"
        return "ok" if sha256_of(path) == info.sha256 else "modified"

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
        activate: bool = False,
        reason: str | None = None,
        tokens: int | None = None,
        seconds: float | None = None,
        record_json: str | None = None,
    ) -> int:
        """Write ``code`` as the node's next version and register it; returns its number.

        Numbers never reuse a file left on disk (for instance by ``remove``). A tool-maker
        version also records its cost and saves ``record_json`` (its make record) beside it
        as ``v<N>.make.json``.
        """
        _check_node_id(node_id)
        _check_author(author)
        with self._write() as m:
            tool = m.tools.setdefault(node_id, ManifestTool())
            on_disk = [
                int(g.group(1))
                for p in (self.lib_dir / node_id).glob("v*")
                if (g := _VERSION_FILE.match(p.name))
            ]
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
            )
            if activate:
                tool.activate(version)
        return version

    def promote(self, node_id: str, version: int) -> None:
        """Make ``version`` the active one (the file must match its sha256)."""
        with self._write() as m:
            tool = self._tool(m, node_id)
            info = tool.versions.get(str(version))
            if info is None:
                known = ", ".join(f"v{v}" for v in sorted(map(int, tool.versions))) or "none"
                raise RegistryError(
                    f"node '{node_id}' has no v{version} (registered: {known}); "
                    "pick one of the registered versions"
                )
            verified_source(self.path_of(node_id, version), info.sha256)
            tool.activate(version)

    def revert(self, node_id: str) -> int:
        """Go back to the version active before the current one; returns it."""
        with self._write() as m:
            tool = self._tool(m, node_id)
            if len(tool.history) < 2:
                raise RegistryError(
                    f"node '{node_id}' has no earlier active version to revert to "
                    f"(history: {tool.history}); use `sopgraph tools promote` instead"
                )
            previous = tool.history[-2]
            info = tool.versions.get(str(previous))
            if info is None:
                raise RegistryError(
                    f"node '{node_id}': earlier version v{previous} is no longer registered; "
                    "use `sopgraph tools promote` instead"
                )
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

    def rehash(self, node_id: str | None = None) -> None:
        """Accept the files as they are now: record their sha256 in the manifest."""
        with self._write() as m:
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

    # -- internals -----------------------------------------------------------------------

    def _load(self, node_id: str, version: int, sha256: str, author: str) -> LoadedTool:
        """The version verified and imported, once per (node, version, sha256)."""
        key = (node_id, version, sha256)
        tool = self._loaded.get(key)
        if tool is None:
            path = self.path_of(node_id, version)
            tool = load_tool(self.lib_dir, node_id, version, sha256, author, path)
            self._loaded[key] = tool
        return tool

    def _tool(self, m: Manifest, node_id: str) -> ManifestTool:
        tool = m.tools.get(node_id)
        if tool is None:
            known = ", ".join(sorted(m.tools)) or "none"
            raise ToolMissing(
                f"no tool for node '{node_id}' in {self.manifest_path} (nodes with tools: {known})"
            )
        return tool

    @staticmethod
    def _entry(node_id: str, tool: ManifestTool) -> ToolEntry:
        versions = [
            VersionInfo(
                int(v),
                i.sha256,
                i.author,
                i.train_pass,
                i.eval_pass,
                i.date,
                i.tokens,
                i.seconds,
                i.record,
            )  # fmt: skip
            for v, i in sorted(tool.versions.items(), key=lambda kv: int(kv[0]))
        ]
        return ToolEntry(node_id, tool.active, versions, list(tool.history))

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


def _check_node_id(node_id: str) -> None:
    if not _NODE_ID.match(node_id):
        raise RegistryError(
            f"node id '{node_id}' cannot name a tool folder; use letters, digits, '_', '-', '.'"
        )
