"""The tool manifest file: its schema, a cached read, and a locked atomic read-modify-write.

``<sop dir>/tools/manifest.json`` is written with sorted keys and indent 2, to a temporary
file renamed over the old one, under an exclusive file lock so that the tool-maker and the
CLI can edit it from different processes without losing an update.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)

try:  # POSIX only; without it concurrent writers from several processes may lose an update
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]


class ManifestInvalid(ValueError):
    """The manifest file does not parse; ``str()`` is one line naming the file and field."""


class ManifestVersion(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sha256: str
    author: str
    train_pass: float | None = None
    eval_pass: float | None = None
    date: str
    reason: str | None = None  # why this version was made (a fix names the case it failed)
    # Set for versions the tool-maker made: what the make cost and where its record lies.
    tokens: int | None = None
    seconds: float | None = None
    record: str | None = None  # file beside the version: every round, trace and decision
    # A development version (``sopgraph tools add --dev``): its file runs as it is at each
    # resolve, its sha256 (the file as registered) is not enforced, and it is never promoted.
    dev: bool = False
    # A model-written version a person promoted with ``--in-process``: it runs in sopgraph's
    # own process; without the mark a model's version runs only in the sandbox.
    in_process: bool = False

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict:
        out = handler(self)
        for key in ("dev", "in_process"):  # written only when set: manifests stay as they were
            if not out.get(key):
                out.pop(key, None)
        return out


class ManifestTool(BaseModel):
    """One node: the active version, the order versions were made active, every version."""

    model_config = ConfigDict(extra="forbid")
    active: int | None = None
    history: list[int] = Field(default_factory=list)
    versions: dict[str, ManifestVersion] = Field(default_factory=dict)

    def activate(self, version: int) -> None:
        if not self.history and self.active is not None:
            self.history.append(self.active)  # a hand-written manifest may omit the history
        if self.active != version:
            self.history.append(version)
        self.active = version


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sop: str = ""
    tools: dict[str, ManifestTool] = Field(default_factory=dict)


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so readers see the old or the new file, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


class ManifestFile:
    """One manifest on disk, re-read only when the file changes (cheap on the hot path)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._file = str(self.path)
        self._lock = threading.RLock()
        self._cached: Manifest | None = None
        self._stamp: tuple[int, int, int] | None = None

    def read(self) -> Manifest:
        """The manifest as it is on disk; an empty one when the file does not exist.

        The returned object is shared: do not modify it (use ``update``).
        """
        with self._lock:
            try:
                st = os.stat(self._file)  # a str: Path.stat costs as much again
            except FileNotFoundError:
                self._cached, self._stamp = None, None
                return Manifest()
            stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
            if self._cached is None or stamp != self._stamp:
                self._cached = self._parse(self.path.read_bytes())
                self._stamp = stamp
            return self._cached

    @contextlib.contextmanager
    def update(self, default_sop: str) -> Iterator[Manifest]:
        """Yield a copy to modify; it is written when the block ends without an exception."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock_path = self.path.parent / f".{self.path.name}.lock"
        with self._lock, open(lock_path, "a") as lock:
            if fcntl is not None:
                fcntl.flock(lock, fcntl.LOCK_EX)
            self._stamp = None  # another process may have written since our last read
            m = self.read().model_copy(deep=True)
            if not m.sop:
                m.sop = default_sop
            yield m
            text = json.dumps(m.model_dump(), sort_keys=True, indent=2) + "\n"
            atomic_write(self.path, text.encode("utf-8"))

    def _parse(self, raw: bytes) -> Manifest:
        try:
            return Manifest.model_validate_json(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "top level"
            raise ManifestInvalid(
                f"{self.path}: invalid manifest at {where}: {err['msg']}; "
                "fix the file or restore it from version control"
            ) from None
