"""A registered tool version's file made runnable: read, checked against the sha256 the manifest
recorded, and imported under the contract (``tools/contract.py``).

The bytes that were hashed are the bytes imported, so a file edited between the check and the
import can never run. Only a hand-written version (author ``human``) is imported into this
process; a model-written one (``tool-maker:<model>``) runs in the sandbox at each call, or is
read as data when it is a filled spec (``tools/jailed.py``), unless a person promoted it with
``--in-process``.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from sopgraph.tools.contract import ContractError, ToolFn, load_run
from sopgraph.tools.registry_errors import ToolIntegrityError, ToolLoadError, ToolMissing


@dataclass(frozen=True)
class LoadedTool:
    """An active tool, checked and imported; ``fn`` is the module's ``run``."""

    node_id: str
    version: int
    sha256: str
    author: str
    path: Path
    fn: ToolFn  # checked against the contract once, at load: ``await fn(input, ctx)``
    sandboxed: bool = False  # a model-written version: ``fn`` runs the file in the sandbox


# The author forms of a model-written version: the tool-maker's, and the run-time Check
# fallback's (``tools/toolmaker/check_fallback.py``), whose candidates load as data too.
MODEL_AUTHORS = ("tool-maker:", "fallback:")


def model_written(author: str) -> bool:
    """Whether the manifest says a model wrote the version (an author in ``MODEL_AUTHORS``)."""
    return author.startswith(MODEL_AUTHORS)


def verified_source(path: Path, expected: str) -> bytes:
    """The file's bytes, once their sha256 is ``expected``.

    Raises:
        ToolMissing: the file is missing.
        ToolIntegrityError: the file differs from the manifest's sha256.
    """
    try:
        source = path.read_bytes()
    except FileNotFoundError:
        raise ToolMissing(
            f"tool file {path} is missing; restore it or `sopgraph tools remove` the node"
        ) from None
    actual = hashlib.sha256(source).hexdigest()
    if actual != expected:
        # <sop dir>/tools/<node>/v<N>.py: the commands that accept the edit, spelled out
        node, sop = path.parent.name, shlex.quote(str(path.parent.parent.parent))
        raise ToolIntegrityError(
            f"{path}: sha256 {actual[:12]} differs from the manifest's {expected[:12]}; "
            f"restore the file, or register the edit as a new version with "
            f"`sopgraph tools add {sop} {node} {shlex.quote(str(path))} --activate`, "
            f"or accept it in place with `sopgraph tools rehash {sop} {node}`"
        )
    return source


def load_tool(
    lib_dir: Path, node_id: str, version: int, sha256: str, author: str, path: Path,
    in_process: bool = False,
) -> LoadedTool:  # fmt: skip
    """The version at ``path`` of the library ``lib_dir``, verified and imported; a
    model-written one only when ``in_process`` (a person promoted it so), else made to run in
    the sandbox.

    Raises:
        ToolMissing: the file is missing.
        ToolIntegrityError: the file differs from ``sha256``.
        ToolLoadError: the file fails to import or breaks the contract.
    """
    source = verified_source(path, sha256)
    if model_written(author) and not in_process:
        fn, jailed = _model_tool(node_id, path, source)
        return LoadedTool(node_id, version, sha256, author, path, fn, jailed)
    # Unique per library, node, version and content, so two SOPs' tools never collide.
    lib = hashlib.sha256(str(lib_dir.resolve()).encode()).hexdigest()[:8]
    safe_id = re.sub(r"\W", "_", node_id)
    try:
        fn = load_run(
            f"_sopgraph_tool_{lib}_{safe_id}_v{version}_{sha256[:12]}", path, source, lib_dir
        )
    except ContractError as exc:
        raise ToolLoadError(str(exc)) from exc.__cause__
    return LoadedTool(node_id, version, sha256, author, path, fn)


def _model_tool(node_id: str, path: Path, source: bytes) -> tuple[ToolFn, bool]:
    """A model-written version's ``run``, none of its code run here (``tools/jailed.py``)."""
    from sopgraph.tools.jailed import model_tool  # the sandbox, only for a model's version

    return model_tool(node_id, path, source)
