"""``sopgraph tools convert-check``: which active tools are specs, and are they the same tools?

A spec version replaces a hand-written one only if it is verdict-identical to it: the same
verdict (``true``/``false``/``no_data``) and the same threshold on every labeled case, train
and held-out. Both versions run as in production (the SOP's MCP servers, the case's
parameters); the replaced version is the one before the spec in the node's history.

Copy groups: active specs that make the same computation on the same data and differ only in
bound arguments (threshold, comparison, windows). A group is shared when at most one of its
members is written out and the others bind a pinned version of it (``spec_of(...).bind``);
a group with two written out is a copy left, and fails the check.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from sopgraph.evals.fc_triage.dataset import load_cases
from sopgraph.evals.tool_eval import _run_case
from sopgraph.graphs.loader import load_sop
from sopgraph.nodes.mcp import McpPool, load_server_configs
from sopgraph.tools.params import ParamStore
from sopgraph.tools.registry import Registry, RegistryError


class NodeCheck(BaseModel):
    node: str
    active: int | None = None
    spec: bool = False
    replaced: int | None = None
    cases: int = 0
    identical: int = 0
    differences: list[str] = Field(default_factory=list)
    error: str | None = None
    binds: str | None = None  # the pinned check it binds (``obs_sorter_jams v4``), if any
    shape: str | None = None  # its check without the bound arguments (``copy_shape``)

    @property
    def ok(self) -> bool:
        return self.spec and self.error is None and self.cases > 0 and self.identical == self.cases


def is_spec(fn: Any) -> bool:
    """Whether a tool's ``run`` was made from a spec (``sopgraph.tools.spec.tool``)."""
    return getattr(fn, "spec", None) is not None


_SPEC_OF = re.compile(r"""spec_of\(\s*["']([\w-]+)["']\s*,\s*(\d+)""")
BOUND_ARGS = ("threshold", "op", "verdict_threshold")  # of a check; a measurement's: minutes


def copy_shape(check: Any) -> str:
    """The check as JSON without what a binding may change: the same shape is a copy."""
    d = check.to_dict()
    for key in BOUND_ARGS:
        d.pop(key, None)
    for m in d.get("measures", {}).values():
        m.pop("minutes", None)
    return json.dumps(d, sort_keys=True)


def binds(path: Path) -> str | None:
    """``node vN`` when the tool file at ``path`` binds another node's pinned check."""
    m = _SPEC_OF.search(path.read_text(encoding="utf-8"))
    return f"{m.group(1)} v{m.group(2)}" if m else None


def copy_groups(results: list[NodeCheck]) -> tuple[list[list[str]], list[list[str]]]:
    """(shared, copied): the groups of active specs with one shape, shared when at most one
    member is written out (the others bind), copied when more are."""
    groups: dict[str, list[NodeCheck]] = defaultdict(list)
    for r in results:
        if r.spec and r.shape:
            groups[r.shape].append(r)
    shared, copied = [], []
    for members in groups.values():
        if len(members) < 2:
            continue
        names = sorted(r.node for r in members)
        (copied if sum(r.binds is None for r in members) > 1 else shared).append(names)
    return shared, copied


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(a)))
    return a == b


async def convert_check(
    sop_dir: Path,
    cases_dir: Path,
    nodes: list[str] | None = None,
    concurrency: int = 8,
    on_node: Callable[[NodeCheck], None] | None = None,
) -> list[NodeCheck]:
    """One ``NodeCheck`` per tool in the registry (or in ``nodes``)."""
    sop = load_sop(sop_dir)
    registry = Registry(sop_dir / "tools")
    params = ParamStore(sop, sop_dir)
    by_tool = {n.tool_name: n for n in sop.decision_nodes}
    sem = asyncio.Semaphore(concurrency)
    out: list[NodeCheck] = []
    async with McpPool(load_server_configs(sop_dir)) as pool:
        for entry in registry.list():
            if nodes and entry.node_id not in nodes:
                continue
            res = NodeCheck(node=entry.node_id, active=entry.active)
            out.append(res)
            node = by_tool.get(entry.node_id)
            try:
                new = registry.resolve(entry.node_id)
            except RegistryError as exc:
                res.error = str(exc)
                continue
            res.spec = is_spec(new.fn)
            if res.spec:
                res.shape = copy_shape(new.fn.spec)
                res.binds = binds(new.path)
            before = [v for v in entry.history if v != entry.active]
            earlier = [
                v for v in before if entry.history.index(v) < entry.history.index(entry.active)
            ]  # type: ignore[arg-type]
            if not res.spec or node is None or not earlier:
                if res.spec and not earlier:
                    res.error = "a spec with no earlier version to compare against"
                if on_node:
                    on_node(res)
                continue
            res.replaced = earlier[-1]
            old = registry.load(entry.node_id, entry.version(res.replaced))  # type: ignore[arg-type]
            try:
                cases = load_cases(cases_dir, node.id)
            except FileNotFoundError as exc:
                res.error = str(exc)
                continue
            res.cases = len(cases)

            async def both(case, node=node, old=old, new=new):
                async with sem:
                    a = await _run_case(old, node, sop, params, pool, case)
                    b = await _run_case(new, node, sop, params, pool, case)
                return case, a, b

            for case, a, b in await asyncio.gather(*(both(c) for c in cases)):
                va, ea = a[0], a[1]
                vb, eb = b[0], b[1]
                same = (
                    va is not None and vb is not None and va.value == vb.value
                    and _same(va.threshold, vb.threshold)
                ) or (va is None and vb is None)  # fmt: skip
                if same:
                    res.identical += 1
                elif len(res.differences) < 5:
                    res.differences.append(
                        f"{case.site} {case.timestamp} ({case.split}): v{res.replaced} "
                        f"{va.value if va else ea} (threshold {va.threshold if va else '-'}), "
                        f"v{res.active} {vb.value if vb else eb} (threshold {vb.threshold if vb else '-'})"
                    )
            if on_node:
                on_node(res)
    return out


def render(results: list[NodeCheck]) -> str:
    specs = [r for r in results if r.spec]
    same = [r for r in specs if r.ok]
    shared, copied = copy_groups(results)
    bound = [f"{r.node} binds {r.binds}" for r in specs if r.binds]
    lines = [
        f"{len(specs)} of {len(results)} active tools are specs; {len(same)} of them are "
        f"verdict-identical to the version they replaced on every labeled case",
        f"copy groups: {len(copied)} left"
        + "".join(f"\n  COPY  {', '.join(g)}: write one, bind the others (spec_of)" for g in copied)
        + f"; {len(shared)} shared ({'; '.join(bound) or 'none'})",
    ]
    for r in results:
        if r.spec and r.ok:
            lines.append(
                f"  spec  {r.node} v{r.active} = v{r.replaced} on {r.cases}/{r.cases} cases"
            )
        elif r.spec:
            why = r.error or f"{r.identical}/{r.cases} cases identical"
            lines.append(f"  DIFF  {r.node} v{r.active} vs v{r.replaced}: {why}")
            lines += [f"        {d}" for d in r.differences]
        else:
            lines.append(f"  code  {r.node} v{r.active}" + (f": {r.error}" if r.error else ""))
    return "\n".join(lines)
