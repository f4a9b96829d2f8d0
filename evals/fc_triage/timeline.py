"""Replay the world's alarms in time order through the SOP, clean or with injected drift.

A timeline runs every scenario alarm oldest first with the active tools, logging each tool
call to its own invocation log. With ``drift``, the MCP servers change at three known
alarms (``mcp_servers/drift.py``): a field's type, a per-interval metric turned cumulative,
a percent endpoint turned fraction. ``timeline.json`` records the onsets, which tools read
each drifted field (the tools a monitor should name), and the alarm order. Candidates
(node -> version) run in shadow beside the active tools.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from sopgraph.evals.fc_triage.build import WorldPaths
from sopgraph.evals.fc_triage.dataset import load_scenarios
from sopgraph.evals.fc_triage.plant import parse_ts
from sopgraph.mcp_servers.drift import DEFAULTS, ENV, Drift
from sopgraph.nodes.mcp import McpPool, load_server_configs
from sopgraph.runtime.runner import Session
from sopgraph.tools.invocation_log import InvocationLog
from sopgraph.tools.params import ParamStore
from sopgraph.tools.registry import Registry
from sopgraph.tools.shadow import Shadow

ONSETS = {"type": 0.35, "cumulative": 0.55, "fraction": 0.75}  # share of the timeline


def readers(sop_dir: Path, field: str) -> list[str]:
    """Nodes whose active tool's source names ``field``: the tools a drift of it reaches."""
    reg = Registry(sop_dir / "tools")
    out = []
    for e in reg.list():
        if e.active is not None and field in reg.path_of(e.node_id, e.active).read_text():
            out.append(e.node_id)
    return sorted(out)


async def run_timeline(
    world: WorldPaths,
    sop_dir: Path,
    out: Path,
    *,
    drift: bool,
    alarms: int | None = None,
    candidates: dict[str, int] | None = None,
    concurrency: int = 4,
    on_alarm: Any = None,
) -> dict[str, Any]:
    """Run the timeline into ``out`` (``invocations.sqlite``, ``timeline.json``); its summary."""
    out.mkdir(parents=True, exist_ok=True)
    log_path = out / "invocations.sqlite"
    for stale in out.glob("invocations.sqlite*"):
        stale.unlink()
    scenarios = sorted(load_scenarios(world.scenarios), key=lambda s: (s.timestamp, s.alarm_id))
    scenarios = scenarios[:alarms] if alarms else scenarios
    drifts: list[dict[str, Any]] = []
    configs = load_server_configs(sop_dir)
    if drift:
        for kind, share in ONSETS.items():
            server, field = DEFAULTS[kind]
            at = int(len(scenarios) * share)
            onset = parse_ts(scenarios[at].timestamp)
            drifts.append(Drift(kind=kind, server=server, field=field, onset=onset).model_dump()
                          | {"onset_alarm": at, "onset_time": scenarios[at].timestamp,
                             "readers": readers(sop_dir, field)})  # fmt: skip
        spec = out / "drift.json"
        spec.write_text(json.dumps(drifts, indent=1))
        for cfg in configs.values():
            cfg.env = {**cfg.env, ENV: str(spec.resolve())}
    order = {sc.alarm_id: i for i, sc in enumerate(scenarios)}
    meta = {"drift": drifts, "alarms": len(scenarios), "order": order,
            "candidates": candidates or {}}  # fmt: skip
    (out / "timeline.json").write_text(json.dumps(meta))
    log = InvocationLog(log_path)
    discrepancies: list[dict] = []
    started = time.perf_counter()
    pool = McpPool(configs)  # the session starts and closes it
    async with Session(
        sop_dir, checkpoint="memory", approval="approve", log_path=log_path, mcp_pool=pool
    ) as session:
        shadow = None
        if candidates:
            params = ParamStore(session.sop, sop_dir)
            shadow = Shadow(session.sop, session.registry, params, candidates, log)
        sem = asyncio.Semaphore(concurrency)

        async def one(i: int, sc) -> None:
            async with sem:
                result = await session.run(sc.input, thread_id=sc.alarm_id)
                if shadow is not None:
                    versions = {s["node"]: s.get("version") for s in result.trail if "node" in s}
                    found = await shadow.compare(
                        i,
                        sc.input,
                        result.verdicts,
                        versions,
                        pool,
                        result.unresolved,
                        run_id=sc.alarm_id,
                    )
                    discrepancies.extend(d.model_dump() for d in found)
            if on_alarm:
                on_alarm()

        await asyncio.gather(*(one(i, sc) for i, sc in enumerate(scenarios)))
    log.close()
    discrepancies.sort(key=lambda d: (d["run"], d["node"]))
    summary = {
        "out": str(out), "alarms": len(scenarios), "drift": [
            {k: d[k] for k in ("kind", "server", "field", "onset_alarm", "onset_time", "readers")}
            for d in drifts
        ],
        "seconds": round(time.perf_counter() - started, 1),
    }  # fmt: skip
    if candidates:
        compared = shadow.compared if shadow is not None else {}
        summary["shadow"] = {
            "candidates": candidates, "compared": compared, "discrepancies": discrepancies
        }  # fmt: skip
        (out / "shadow.json").write_text(json.dumps(summary["shadow"], indent=1, default=str))
    return summary
