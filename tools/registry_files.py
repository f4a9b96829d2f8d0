"""The registry's folder on disk: the version files (``<node>/v<N>.py``), those the manifest
does not register, and the ``sopgraph tools`` commands a refusal names to register them."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from pathlib import Path

from sopgraph.tools.manifest import ManifestTool

_VERSION_FILE = re.compile(r"^v(\d+)\.(?:py|make\.json)$")


def numbers_on_disk(node_dir: Path) -> list[int]:
    """The version numbers of the files in a node's folder (a tool or its make record)."""
    return [int(g.group(1)) for p in node_dir.glob("v*") if (g := _VERSION_FILE.match(p.name))]


def unregistered(lib_dir: Path, tools: dict[str, ManifestTool]) -> list[Path]:
    """Version files on disk (``<node>/v<N>.py``) that ``tools`` does not register."""
    found = []
    for path in sorted(lib_dir.glob("*/v*.py")):
        g = _VERSION_FILE.match(path.name)
        node = path.parent.name
        if g and str(int(g.group(1))) not in (tools[node].versions if node in tools else {}):
            found.append(path)
    return found


def sop_arg(lib_dir: Path) -> str:
    """The SOP folder as a shell argument, for the commands a message names."""
    return shlex.quote(str(lib_dir.parent))


def add_command(lib_dir: Path, path: Path) -> str:
    return f"`sopgraph tools add {sop_arg(lib_dir)} {path.parent.name} {shlex.quote(str(path))}`"


def nothing_registered(manifest_path: Path, lib_dir: Path, files: list[Path]) -> str:
    """Why there is nothing to rehash, naming the unregistered ``files`` and how to add them."""
    if not files:
        return (
            f"{manifest_path} registers no tool and {lib_dir} holds no version "
            f"file; register one with `sopgraph tools add {sop_arg(lib_dir)} NODE FILE`"
        )
    more = f" and {len(files) - 1} more" if len(files) > 1 else ""
    names = ", ".join(str(f.relative_to(lib_dir)) for f in files[:3])
    return (
        f"nothing to rehash: {manifest_path} registers no tool, and {len(files)} "
        f"version file(s) on disk are not registered ({names}); register each with "
        f"{add_command(lib_dir, files[0])}{more}"
    )


def no_tool(
    manifest_path: Path, lib_dir: Path, node_id: str, nodes: Iterable[str], files: list[Path]
) -> str:
    """The node has no manifest entry: the nodes that do, and how to register one for it
    (its unregistered ``files`` on disk, if any)."""
    known = ", ".join(sorted(nodes)) or "none"
    how = (
        f"register its file with {add_command(lib_dir, files[-1])}"
        if files
        else f"register one with `sopgraph tools add {sop_arg(lib_dir)} {node_id} FILE`"
    )
    return f"no tool for node '{node_id}' in {manifest_path} (nodes with tools: {known}); {how}"
