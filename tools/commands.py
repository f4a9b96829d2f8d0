"""``sopgraph tools list|add|promote|revert|remove|rehash``: library functions the CLI calls.

Each returns the text to print; a mistake the user can fix raises a ``RegistryError`` whose
``str()`` is one line.
"""

from __future__ import annotations

import difflib
import shlex
from pathlib import Path
from typing import Any

from sopgraph.graphs.loader import SopError, load_sop
from sopgraph.graphs.untrusted_text import json_text
from sopgraph.tools.registry import Registry, RegistryError, ToolEntry, VersionInfo
from sopgraph.tools.tool_file import model_written

_HEADER = ("node", "active", "versions", "author", "train", "eval", "date", "sha256", "status")


def _sop_dir(path: Path) -> Path:
    """Accept the SOP folder or its ``sop.yaml``."""
    path = Path(path)
    return path.parent if path.is_file() else path


def registry_for(sop_dir: Path) -> Registry:
    return Registry(_sop_dir(sop_dir) / "tools")


def _decision_nodes(sop_dir: Path) -> list[str]:
    """Decision nodes of the SOP next to the tools, if it loads; tools list must work anyway."""
    try:
        sop = load_sop(_sop_dir(sop_dir), check=False)
    except SopError:
        return []
    return [n.tool_name for n in sop.decision_nodes]


def _tool_names(sop_dir: Path) -> list[str] | None:
    """The tool name of every node of the SOP (None: it does not load)."""
    try:
        sop = load_sop(_sop_dir(sop_dir), check=False)
    except SopError:
        return None
    return sorted({n.tool_name for n in sop.nodes.values()})


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


def _row(reg: Registry, e: ToolEntry) -> dict[str, Any]:
    active = e.version(e.active) if e.active is not None else None
    return {
        "node": e.node_id,
        "active": e.active,
        "history": e.history,
        "status": reg.status(e.node_id, e.active) if active else "no active version",
        "versions": [
            {
                "version": v.version,
                "sha256": v.sha256,
                "author": v.author,
                "train_pass": v.train_pass,
                "eval_pass": v.eval_pass,
                "date": v.date,
                "tokens": v.tokens,
                "seconds": v.seconds,
                "record": v.record,
            }
            for v in e.versions
        ],
    }


def tools_list(sop_dir: Path, as_json: bool = False) -> str:
    """Every node's tool: active version and its author, pass rates, date, sha and status.

    Decision nodes of the SOP without a tool are listed too (they fall back to the
    sub-agent). Status is ``ok``, ``modified`` (file differs from the manifest: it will be
    refused) or ``missing``.
    """
    reg = registry_for(sop_dir)
    rows = [_row(reg, e) for e in reg.list()]
    tooled = {r["node"] for r in rows}
    for node in _decision_nodes(sop_dir):
        if node not in tooled:
            tooled.add(node)
            rows.append(
                {"node": node, "active": None, "history": [], "status": "no tool", "versions": []}
            )
    for path in reg.unregistered():
        row = next((r for r in rows if r["node"] == path.parent.name), None)
        if row is not None and not row["versions"]:
            row["status"] = f"not registered: {path.name} (sopgraph tools add)"
    rows.sort(key=lambda r: r["node"])
    if as_json:
        return json_text({"sop": reg.sop_id, "tools": rows})
    table = [_HEADER]
    for r in rows:
        v = next((v for v in r["versions"] if v["version"] == r["active"]), None)
        table.append(
            (
                r["node"],
                f"v{r['active']}" if r["active"] is not None else "-",
                ",".join(str(x["version"]) for x in r["versions"]) or "-",
                v["author"] if v else "-",
                _pct(v["train_pass"]) if v else "-",
                _pct(v["eval_pass"]) if v else "-",
                v["date"] if v else "-",
                v["sha256"][:12] if v else "-",
                r["status"],
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(_HEADER))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in table
    )


def _figures(v: VersionInfo) -> str:
    cost = ""
    if v.tokens is not None or v.seconds is not None:
        cost = f", made with {v.tokens or 0:,} tokens in {v.seconds or 0:.0f} s"
    record = f", record {v.record}" if v.record else ""
    return (
        f"v{v.version} by {v.author} ({v.date}): train {_pct(v.train_pass)}, "
        f"held-out {_pct(v.eval_pass)}{cost}{record}"
    )


def promote_preview(reg: Registry, node: str, version: int, shadow: str | None = None) -> str:
    """The diff from the active version to ``version``, both versions' figures and the last
    shadow run of ``version`` beside the active one."""
    entry = reg.entry(node)
    new = entry.version(version)
    if new is None:
        return ""  # promote() raises the one-line error
    lines = []
    old = entry.version(entry.active) if entry.active is not None else None
    if old is not None and old.version != version:
        lines.append(f"active: {_figures(old)}")
    lines.append(f"new:    {_figures(new)}")
    lines.append(f"shadow: {shadow or 'never run beside the active version (sopgraph shadow)'}")
    if old is not None and old.version != version:
        a, b = reg.path_of(node, old.version), reg.path_of(node, version)
        if a.is_file() and b.is_file():
            diff = difflib.unified_diff(
                a.read_text(encoding="utf-8").splitlines(),
                b.read_text(encoding="utf-8").splitlines(),
                fromfile=f"{node}/v{old.version}.py",
                tofile=f"{node}/v{version}.py",
                lineterm="",
            )
            lines.extend(diff)
    return "\n".join(lines)


def tools_promote(sop_dir: Path, node: str, version: int, in_process: bool = False) -> str:
    """Show the diff against the active version and the figures of both, then switch; say
    where a model-written version runs (the sandbox, or this process with ``in_process``)."""
    reg = registry_for(sop_dir)
    before = reg.entry(node).active
    from sopgraph.tools.shadow import shadow_summary

    preview = promote_preview(reg, node, version, shadow_summary(sop_dir, node, version))
    reg.promote(node, version, in_process=in_process)
    was = f" (was v{before})" if before is not None and before != version else ""
    done = f"{node}: v{version} is active{was}"
    info = reg.entry(node).version(version)
    where = ""
    if info is not None and info.in_process:
        where = "runs: in-process (unsandboxed), as --in-process asked; written by a model"
    elif info is not None and model_written(info.author):
        where = (
            "runs: in the sandbox at each call, as a model wrote it (after reading it, "
            "`--in-process` lets it run in sopgraph's own process)"
        )
    return "\n".join(part for part in (preview, where, done) if part)


def tools_revert(sop_dir: Path, node: str) -> str:
    reg = registry_for(sop_dir)
    before = reg.entry(node).active
    version = reg.revert(node)
    return f"{node}: reverted to v{version} (was v{before})"


def tools_remove(sop_dir: Path, node: str) -> str:
    reg = registry_for(sop_dir)
    reg.remove(node)
    return (
        f"{node}: removed from {reg.manifest_path} (files kept in {reg.lib_dir / node}); "
        "the node now falls back to the sub-agent"
    )


def tools_add(
    sop_dir: Path, node: str, file: Path, dev: bool = False, activate: bool = False
) -> str:
    """Register the hand-written tool ``file`` as ``node``'s next version (see
    ``Registry.add_file``); the node must be one of the SOP's when the SOP loads."""
    names = _tool_names(sop_dir)
    if names is not None and node not in names:
        near = difflib.get_close_matches(node, names, n=1)
        hint = f"did you mean '{near[0]}'?" if near else f"its nodes: {', '.join(names)}"
        raise RegistryError(f"{_sop_dir(sop_dir) / 'sop.yaml'} has no node '{node}'; {hint}")
    reg = registry_for(sop_dir)
    version, active = reg.add_file(node, Path(file), dev=dev, activate=True if activate else None)
    path = reg.path_of(node, version)
    sop = shlex.quote(str(sop_dir))
    if dev:
        return (
            f"{node}: v{version} registered as a development version and active: edit {path}; "
            "each run uses the file as it is then, with no checksum. When it is done, register "
            f"it for review: `sopgraph tools add {sop} {node} {shlex.quote(str(path))}`"
        )
    sha = reg.entry(node).version(version).sha256[:12]  # type: ignore[union-attr]
    done = f"{node}: v{version} registered from {file} as {path} (author human, sha256 {sha})"
    if active:
        return f"{done}, active"
    before = reg.entry(node).active
    return (
        f"{done}; v{before} stays active. To switch: `sopgraph tools promote {sop} {node} "
        f"{version}`"
    )


def tools_rehash(sop_dir: Path, node: str | None = None) -> str:
    reg = registry_for(sop_dir)
    count = reg.rehash(node)
    text = f"rehashed {node or 'every tool'} ({count} version(s)) in {reg.manifest_path}"
    files = [] if node else reg.unregistered()
    if files:
        first = files[0]
        text += (
            f"; not registered, so not rehashed: "
            f"{', '.join(str(f.relative_to(reg.lib_dir)) for f in files)} (register with "
            f"`sopgraph tools add {shlex.quote(str(sop_dir))} {first.parent.name} "
            f"{shlex.quote(str(first))}`)"
        )
    return text
