"""The SOPs sopgraph's MCP server offers: discovery on a search path and what it says about them.

The pydantic models here are the server's tool outputs, so their fields and descriptions are
what an MCP client (often a model) reads.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mcp.server.fastmcp.exceptions import ResourceError, ToolError
from mcp.server.fastmcp.resources import FunctionResource
from pydantic import BaseModel, Field

from sopgraph.examples import EXAMPLES
from sopgraph.graphs.input_schema import example_input, input_json_schema
from sopgraph.graphs.loader import SopError, load_sop
from sopgraph.graphs.model import Sop, Verdict
from sopgraph.graphs.topology import reachable

SOPS_ENV = "SOPGRAPH_SOPS"
# What a tool reads from the run input: ``ctx.input["x"]`` is required, ``.get("x")`` optional.
_REQUIRED = re.compile(r"""ctx\.input\[\s*["'](\w+)["']\s*\]""")
_OPTIONAL = re.compile(r"""ctx\.input\.get\(\s*["'](\w+)["']""")


class SopSummary(BaseModel):
    id: str
    title: str
    version: int
    description: str
    entry_types: list[str] = Field(description="Values of the input's 'type' field.")
    decision_nodes: int
    action_nodes: int
    gated_actions: int = Field(description="Actions that pause the run for approval.")


class EntryInfo(BaseModel):
    type: str = Field(description="The input's 'type' for this entry.")
    entry_nodes: list[str]
    required_fields: list[str] = Field(description="Input fields a run of this type requires.")
    optional_fields: list[str] = Field(description="Input fields it may take besides.")
    example_input: dict[str, Any] = Field(description="An input run_sop accepts for this type.")


class NodeInfo(BaseModel):
    id: str
    kind: str
    title: str
    text: str = Field(description="The node's text with default parameters filled in.")
    children: list[str]
    approval: str
    cost: str
    has_tool: bool = Field(description="Whether a compiled tool decides this node.")


class SopInfo(BaseModel):
    id: str
    title: str
    version: int
    description: str
    entries: list[EntryInfo]
    input_schema: dict[str, Any] | None = Field(
        description="JSON schema of the run input (the SOP's 'input' section); run_sop "
        "checks it before any node runs. None when the SOP declares no input section."
    )
    params: dict[str, Any] = Field(description="Parameters with their default values.")
    sites: list[str] = Field(description="Sites with their own parameters (input 'site').")
    gated_actions: list[str] = Field(description="Action nodes that pause for approval.")
    nodes: list[NodeInfo]


class RunSummary(BaseModel):
    """A run's state as an MCP client sees it."""

    run_id: str = Field(description="Pass to get_run and resume_run.")
    sop_id: str
    status: Literal["done", "interrupted", "refused", "unresolved", "unmatched", "bounded"] = Field(
        description="done; interrupted (a gated action awaits resume_run); refused (a data "
        "source refused the run's identity access); unresolved (a node "
        "could not be decided); unmatched (a verdict matched none of a node's branches); "
        "bounded (a loop ran out of visits without taking its exit)."
    )
    next_step: str = Field(description="What to do next, if anything.")
    path: list[str] = Field(description="Node ids in execution order.")
    verdicts: dict[str, Verdict]
    actions: list[dict[str, Any]]
    pending: list[dict[str, Any]] = Field(
        description="Gated actions awaiting a decision; resume_run names one by its id."
    )
    unresolved: dict[str, str] = Field(description="Nodes that could not be decided, and why.")
    unmatched: dict[str, str] = Field(
        default_factory=dict, description="Nodes whose verdict matched no branch, and why."
    )
    bounded: dict[str, str] = Field(
        default_factory=dict, description="Loop nodes that ran out of visits, and why."
    )
    input: dict[str, Any]
    resumed: bool
    trail: list[dict[str, Any]] | None = None

    @classmethod
    def of(cls, result: Any, trail: bool = False) -> RunSummary:
        if result.status == "interrupted":
            gates = ", ".join(
                f"{i.get('node')} (interrupt_id {i.get('id')})" for i in result.interrupts
            )
            hint = f"call resume_run with decision 'approve' or 'reject' and the interrupt_id of {gates}"
        elif result.status == "refused":
            hint = "none: a data source refused this identity access (see unresolved)"
        elif result.status == "unresolved":
            hint = "none: some nodes could not be decided (see unresolved)"
        elif result.status == "unmatched":
            hint = "none: a verdict matched no branch of the SOP (see unmatched)"
        elif result.status == "bounded":
            hint = "none: a loop ran out of visits without taking its exit (see bounded)"
        else:
            hint = "none: the run is finished"
        return cls(
            run_id=result.thread_id,
            sop_id=result.sop_id,
            status=result.status,
            next_step=hint,
            path=result.path,
            verdicts=result.verdicts,
            actions=result.actions,
            pending=result.interrupts,
            unresolved={**result.unresolved, **result.refused},
            unmatched=result.unmatched,
            bounded=result.bounded,
            input=result.input,
            resumed=result.resumed,
            trail=result.trail if trail else None,
        )


@dataclass
class CatalogEntry:
    """One SOP: its folder, parsed model and file text."""

    path: Path
    sop: Sop
    text: str

    def summary(self) -> SopSummary:
        sop = self.sop
        return SopSummary(
            id=sop.id,
            title=sop.title,
            version=sop.version,
            description=sop.description,
            entry_types=list(sop.entry),
            decision_nodes=len(sop.decision_nodes),
            action_nodes=len(sop.action_nodes),
            gated_actions=sum(n.approval == "required" for n in sop.action_nodes),
        )

    def info(self) -> SopInfo:
        from sopgraph.tools.registry import Registry

        sop = self.sop
        registry = Registry(self.path / "tools")
        return SopInfo(
            id=sop.id,
            title=sop.title,
            version=sop.version,
            description=sop.description,
            entries=[self._entry(kind, ids, registry) for kind, ids in sop.entry.items()],
            input_schema=input_json_schema(sop) if sop.input else None,
            params=sop.params,
            sites=sorted(p.stem for p in (self.path / "params").glob("*.yaml")),
            gated_actions=[n.id for n in sop.action_nodes if n.approval == "required"],
            nodes=[
                NodeInfo(
                    id=n.id,
                    kind=n.kind,
                    title=n.title,
                    text=sop.render_text(n).strip(),
                    children=n.next.children(),
                    approval=n.approval,
                    cost=n.cost,
                    has_tool=registry.has(n.tool_name),
                )
                for n in sop.nodes.values()
            ],
        )

    def _entry(self, kind: str, ids: list[str], registry: Any) -> EntryInfo:
        if self.sop.input:  # the SOP's own contract, checked by run_sop
            fields = self.sop.input
            return EntryInfo(
                type=kind,
                entry_nodes=ids,
                required_fields=[n for n, f in fields.items() if f.required_by(kind)],
                optional_fields=[n for n, f in fields.items() if not f.required_by(kind)],
                example_input=example_input(self.sop, kind),
            )
        # No contract: what the SOP's tools read from the input, found in their source.
        required: dict[str, None] = {}
        optional: dict[str, None] = {}
        for node_id in self._reachable(ids):
            source = _tool_source(registry, self.sop.nodes[node_id].tool_name)
            required.update(dict.fromkeys(_REQUIRED.findall(source)))
            optional.update(dict.fromkeys(_OPTIONAL.findall(source)))
        # Every tool gets the input's site (which also picks the site's parameters) and time.
        optional.update(dict.fromkeys(("site", "timestamp")))
        optional = {k: None for k in optional if k not in required}
        example: dict[str, Any] = {} if len(self.sop.entry) == 1 else {"type": kind}
        example.update({k: f"<{k}>" for k in required})
        return EntryInfo(
            type=kind,
            entry_nodes=ids,
            required_fields=list(required),
            optional_fields=list(optional),
            example_input=example,
        )

    def _reachable(self, start: list[str]) -> list[str]:
        return reachable(self.sop, start)


def _tool_source(registry: Any, tool: str) -> str:
    if not registry.has(tool):
        return ""
    active = registry.entry(tool).active
    try:
        return registry.path_of(tool, active).read_text(encoding="utf-8")
    except OSError:
        return ""


@dataclass
class Catalog:
    """SOPs by id; ``problems`` are the SOP files that were skipped, one line each."""

    sops: dict[str, CatalogEntry] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def entries(self) -> list[CatalogEntry]:
        return list(self.sops.values())

    def get(self, sop_id: str) -> CatalogEntry:
        entry = self.sops.get(sop_id)
        if entry is None:
            known = ", ".join(sorted(self.sops)) or f"none: set {SOPS_ENV}"
            raise ToolError(f"unknown SOP id {sop_id!r}; known SOPs: {known} (see list_sops)")
        return entry


def search_path() -> list[Path]:
    """``SOPGRAPH_SOPS`` folders first, then ``examples/`` under the cwd and the repository."""
    dirs = [Path(d) for d in os.environ.get(SOPS_ENV, "").split(os.pathsep) if d.strip()]
    return [*dirs, Path.cwd() / "examples", EXAMPLES]


def _sop_files(folder: Path) -> list[Path]:
    if (folder / "sop.yaml").is_file():
        return [folder / "sop.yaml"]
    return sorted(folder.glob("*/sop.yaml")) if folder.is_dir() else []


def discover(paths: list[Path] | None = None) -> Catalog:
    """Load every SOP on the search path; the first SOP with a given id wins."""
    catalog = Catalog()
    seen: set[Path] = set()
    for folder in paths if paths is not None else search_path():
        for file in _sop_files(folder):
            real = file.resolve()
            if real in seen:
                continue
            seen.add(real)
            try:
                sop = load_sop(real)
            except SopError as exc:
                catalog.problems.append(f"{file}: {str(exc).splitlines()[0]}")
                continue
            if sop.id in catalog.sops:
                catalog.problems.append(
                    f"{file}: SOP id {sop.id} already served from {catalog.sops[sop.id].path}"
                )
                continue
            catalog.sops[sop.id] = CatalogEntry(real.parent, sop, real.read_text(encoding="utf-8"))
    return catalog


def add_resources(server: Any, catalog: Catalog) -> None:
    """Offer each SOP's text and Mermaid drawing as resources ``sop://<id>/text|mermaid``."""

    def sop_text(sop_id: str) -> str:
        return _entry(catalog, sop_id).text

    def sop_mermaid(sop_id: str) -> str:
        entry = _entry(catalog, sop_id)
        try:
            from sopgraph.graphs.drawing import to_mermaid
        except ImportError as exc:
            raise ResourceError(f"Mermaid drawing is not available: {exc}") from None
        return to_mermaid(entry.sop)

    # Templates let a client build the URI from an id; concrete entries make them listable.
    server.resource(
        "sop://{sop_id}/text",
        name="sop_text",
        mime_type="application/yaml",
        description="The SOP file (YAML) of an SOP.",
    )(sop_text)
    server.resource(
        "sop://{sop_id}/mermaid",
        name="sop_mermaid",
        mime_type="text/vnd.mermaid",
        description="The SOP's decision graph as a Mermaid flowchart.",
    )(sop_mermaid)
    for e in catalog.entries():
        sid = e.sop.id
        for kind, fn, mime in (
            ("text", sop_text, "application/yaml"),
            ("mermaid", sop_mermaid, "text/vnd.mermaid"),
        ):
            server.add_resource(
                FunctionResource(
                    uri=f"sop://{sid}/{kind}",
                    name=f"{sid}_{kind}",
                    title=f"{e.sop.title or sid} ({'YAML' if kind == 'text' else 'Mermaid'})",
                    mime_type=mime,
                    fn=lambda fn=fn, sid=sid: fn(sid),
                )
            )


def _entry(catalog: Catalog, sop_id: str) -> Any:
    try:
        return catalog.get(sop_id)
    except ToolError as exc:
        raise ResourceError(str(exc)) from None
