"""What the registry refuses: a node id that cannot name a tool folder, an author that is
neither a person nor a model, and a version that cannot be promoted or reverted to."""

from __future__ import annotations

import re
from pathlib import Path

from sopgraph.tools.manifest import ManifestTool, ManifestVersion
from sopgraph.tools.registry_errors import RegistryError
from sopgraph.tools.registry_files import add_command
from sopgraph.tools.tool_file import model_written

_NODE_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


def check_author(author: str) -> None:
    # a model-written version (the tool-maker's, the run-time Check fallback's) names its model
    if author != "human" and not (model_written(author) and not author.endswith(":")):
        raise RegistryError(
            f"author '{author}' is not valid; use 'human', 'tool-maker:<model>' or "
            "'fallback:<model>'"
        )


def check_node_id(node_id: str) -> None:
    if not _NODE_ID.match(node_id):
        raise RegistryError(
            f"node id '{node_id}' cannot name a tool folder; use letters, digits, '_', '-', '.'"
        )


def promotable(
    tool: ManifestTool, node_id: str, version: int, in_process: bool, lib_dir: Path, path: Path
) -> ManifestVersion:
    """The registered ``version`` that ``promote`` may activate (its file at ``path``).

    Raises:
        RegistryError: not registered, a development version, or ``in_process`` asked for a
            hand-written version.
    """
    info = tool.versions.get(str(version))
    if info is None:
        known = ", ".join(f"v{v}" for v in sorted(map(int, tool.versions))) or "none"
        raise RegistryError(
            f"node '{node_id}' has no v{version} (registered: {known}); "
            "pick one of the registered versions"
        )
    if info.dev:
        raise RegistryError(
            f"node '{node_id}': v{version} is a development version (its file runs "
            "unchecked) and is never promoted; register it for review with "
            f"{add_command(lib_dir, path)}"
        )
    if in_process and not model_written(info.author):
        raise RegistryError(
            f"node '{node_id}': v{version} is by {info.author} and runs in-process "
            "already; --in-process is for a version a model wrote"
        )
    return info


def revert_target(tool: ManifestTool, node_id: str) -> tuple[int, ManifestVersion]:
    """The version active before the current one, which ``revert`` goes back to.

    Raises:
        RegistryError: no earlier active version, or it is no longer registered.
    """
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
    return previous, info
