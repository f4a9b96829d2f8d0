"""Shadow mode: candidate tool versions run beside the active ones on the same inputs.

After each run, every node the run decided with a compiled tool that has a candidate is
decided again by the candidate, with the same input, parameters and parent verdicts. The
run's path and actions are untouched; both calls are in the invocation log (the candidate's
with executor ``shadow``) and every disagreement is a ``Discrepancy``.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from sopgraph.graphs.executors import ToolContext
from sopgraph.graphs.home import home_dir
from sopgraph.graphs.model import Sop, Verdict
from sopgraph.nodes.tool_node import as_verdict
from sopgraph.tools.invocation_log import InvocationLog
from sopgraph.tools.params import ParamStore
from sopgraph.tools.registry import Registry, RegistryError


class Discrepancy(BaseModel):
    run_id: str
    run: int  # the run's index in the timeline
    node: str
    active_version: int | None
    candidate_version: int
    active: str
    candidate: str
    active_observed: Any = None
    candidate_observed: Any = None
    candidate_error: str | None = None


class Shadow:
    """Candidate versions (node -> version) loaded once, checked against the manifest."""

    def __init__(self, sop: Sop, registry: Registry, params: ParamStore, candidates: dict[str, int],
                 log: InvocationLog | None = None):  # fmt: skip
        self.sop, self.params, self.log = sop, params, log
        self.candidates = candidates
        self.fns = {}
        for node_id, version in candidates.items():
            info = registry.entry(node_id).version(version)
            if info is None:
                raise RegistryError(f"shadow: node '{node_id}' has no registered v{version}")
            self.fns[node_id] = registry.load(node_id, info).fn
        self.active = {n: registry.entry(n).active for n in candidates}
        self.calls = 0
        self.compared = dict.fromkeys(candidates, 0)  # per node: runs that reached it

    async def compare(
        self, index: int, run_input: dict[str, Any], verdicts: dict[str, Verdict],
        versions: dict[str, int | None], mcp: Any, unresolved: dict[str, str] | None = None,
        run_id: str | None = None,
    ) -> list[Discrepancy]:  # fmt: skip
        """Decide the run's candidate nodes again; the disagreements with the run.

        A node the active tool could not decide (``unresolved``) counts as ``unresolved``.
        """
        unresolved = unresolved or {}
        out = []
        p = self.params.for_input(run_input)
        for node_id, fn in self.fns.items():
            if node_id not in verdicts and node_id not in unresolved:
                continue
            node = self.sop.nodes[node_id]
            parents = {
                q: verdicts[q] for q, n in self.sop.nodes.items()
                if q in verdicts and node_id in n.next.children()
            }  # fmt: skip
            ctx = ToolContext(node_id=node_id, text=self.sop.render_text(node, p), params=p,
                              parents=parents, input=run_input, run_id=run_id or str(index),
                              mcp=mcp, node=node)  # fmt: skip
            start, error, got = time.perf_counter(), None, None
            try:
                got = as_verdict(await fn(run_input, ctx))
            except Exception as exc:  # noqa: BLE001 - a failing candidate is a discrepancy
                error = f"{type(exc).__name__}: {exc}"
            self.calls += 1
            self.compared[node_id] += 1
            if self.log is not None:
                self.log.record(
                    run_id=ctx.run_id, node=node_id, tool=node.tool_name,
                    version=self.candidates[node_id], inputs={"input": run_input, "params": p},
                    output=got, latency_ms=(time.perf_counter() - start) * 1000, error=error,
                    executor="shadow",
                )  # fmt: skip
            active = verdicts.get(node_id)
            active_value = active.value if active else "unresolved"
            value = got.value if got else "error"
            if value != active_value:
                out.append(Discrepancy(
                    run_id=ctx.run_id, run=index, node=node_id,
                    active_version=versions.get(node_id) or self.active[node_id], candidate_version=self.candidates[node_id],
                    active=active_value, candidate=value,
                    active_observed=active.observed if active else unresolved.get(node_id),
                    candidate_observed=got.observed if got else None, candidate_error=error,
                ))  # fmt: skip
        return out


def shadow_record_path(sop_dir: Path, node: str, version: int, home: Path | None = None) -> Path:
    """Where the last shadow run of ``node`` ``version`` is kept: run state in sopgraph's home,
    like the invocation log, so that a shadow run never edits the library's files."""
    return (home or home_dir()) / "shadow" / sop_dir.resolve().name / node / f"v{version}.json"


def record_shadow(
    sop_dir: Path, candidates: dict[str, int], runs: int, timeline: str,
    discrepancies: list[dict[str, Any]], home: Path | None = None,
) -> None:  # fmt: skip
    """Keep each candidate's shadow outcome where ``tools promote`` reads it."""
    for node, version in candidates.items():
        mine = [d for d in discrepancies if d["node"] == node]
        first = f", first at run {min(d['run'] for d in mine)}" if mine else ""
        path = shadow_record_path(sop_dir, node, version, home)
        path.parent.mkdir(parents=True, exist_ok=True)
        summary = (
            f"{datetime.now(UTC).date().isoformat()}: {runs} runs on the {timeline} timeline, "
            f"{len(mine)} discrepancies with the active version{first} ({path})"
        )
        path.write_text(json.dumps({"summary": summary, "discrepancies": mine}, indent=1,
                                   default=str))  # fmt: skip


def shadow_summary(sop_dir: Path, node: str, version: int, home: Path | None = None) -> str | None:
    """The one-line outcome of the last shadow run of ``node`` ``version``, if any."""
    path = shadow_record_path(sop_dir, node, version, home)
    try:
        return json.loads(path.read_text())["summary"]
    except (OSError, ValueError, KeyError):
        return None
