"""What the registry reports of a node's tool: ``VersionInfo`` and ``ToolEntry``, read from the
manifest."""

from __future__ import annotations

from dataclasses import dataclass

from sopgraph.tools.manifest import ManifestTool


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
    dev: bool = False  # a development version: runs as the file is now, never promoted
    in_process: bool = False  # model-written, promoted with --in-process: runs in this process


@dataclass(frozen=True)
class ToolEntry:
    """A node's manifest entry: its active version and every registered version."""

    node_id: str
    active: int | None
    versions: list[VersionInfo]
    history: list[int]

    def version(self, n: int) -> VersionInfo | None:
        return next((v for v in self.versions if v.version == n), None)


def entry_of(node_id: str, tool: ManifestTool) -> ToolEntry:
    """The node's manifest entry as the registry reports it, its versions by number."""
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
            i.dev,
            i.in_process,
        )  # fmt: skip
        for v, i in sorted(tool.versions.items(), key=lambda kv: int(kv[0]))
    ]
    return ToolEntry(node_id, tool.active, versions, list(tool.history))
