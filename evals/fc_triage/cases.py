"""Labeled cases per decision node: (site, timestamp, input) with the expected verdict.

Candidates come from around the alarms (where verdicts flip) and from random instants; each
node gets 100-200 cases balanced across its verdicts, split in time: the earlier half
trains the tool-maker, the later half is held out.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from sopgraph.evals.fc_triage.labeler import STATION_NODES, Labeler, Query
from sopgraph.evals.fc_triage.plant import T0, TICK_S, iso
from sopgraph.evals.fc_triage.scenarios import TIE_EPS
from sopgraph.graphs.model import Sop

TARGET = 150
MIN_CASES = 100
MAX_NO_DATA = 20


def entry_type_of(sop: Sop) -> dict[str, str]:
    """For every node, the first alarm type whose SOP subgraph reaches it."""
    out: dict[str, str] = {}
    for kind, roots in sop.entry.items():
        stack = list(roots)
        while stack:
            nid = stack.pop()
            if nid in out and out[nid] != kind:
                continue
            if nid in out:
                continue
            out[nid] = kind
            stack += sop.nodes[nid].next.children()
    return out


def _pool(
    world_sites: dict, alarms: list[dict], rng: np.random.Generator, n_ticks: int
) -> list[tuple]:
    """(site, ts, station) candidates: inside and just after every fault episode, around
    every alarm, and at random instants."""
    sites, ticks, stations = [], [], []
    for site, fr in world_sites.items():
        for f in fr.faults:
            sites += [site] * 4
            ticks += rng.integers(f.start, f.end + 6, 4).tolist()
            stations += [
                f.station or fr.stations[int(i)] for i in rng.integers(0, len(fr.stations), 4)
            ]
    for a in alarms:
        fr = world_sites[a["site"]]
        sites.append(a["site"])
        ticks.append((a["ts"] - T0) // TICK_S + int(rng.integers(-6, 7)))
        stations.append(a["station"] or fr.stations[int(rng.integers(len(fr.stations)))])
    names = list(world_sites)
    for _ in range(len(sites) // 3):
        fr = world_sites[names[int(rng.integers(len(names)))]]
        sites.append(fr.spec.name)
        ticks.append(int(rng.integers(24, n_ticks)))
        stations.append(fr.stations[int(rng.integers(len(fr.stations)))])
    t = np.clip(np.array(ticks), 24, n_ticks - 1)
    # One instant in eight lands exactly on a sample boundary, where window edges matter.
    off = np.where(rng.random(len(t)) < 0.125, 0, rng.integers(1, TICK_S, len(t)))
    ts = (T0 + t * TICK_S + off).tolist()
    return list(zip(sites, ts, stations, strict=True))


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    return x


def build_cases(
    sop: Sop,
    labeler: Labeler,
    alarms: list[dict],
    params_of: dict[str, dict[str, Any]],
    seed: int,
    max_evals: int = 4000,
) -> dict[str, list[dict]]:
    """Cases per decision node id."""
    world = labeler.world
    etype = entry_type_of(sop)
    out: dict[str, list[dict]] = {}
    base = _pool(world.sites, alarms, np.random.default_rng([seed, 2]), world.n_ticks)
    for node in sop.decision_nodes:
        rng = np.random.default_rng([seed, zlib.crc32(node.id.encode())])
        pool = [base[int(i)] for i in rng.permutation(len(base))[:max_evals]]
        by_value: dict[str, list[dict]] = {"true": [], "false": [], "no_data": []}
        seen: set[tuple] = set()
        half = TARGET // 2
        for site, ts, st in pool:
            if len(by_value["true"]) >= half and len(by_value["false"]) >= half:
                break
            station = st if node.id in STATION_NODES else None
            key = (site, ts, station)
            if key in seen:
                continue
            seen.add(key)
            t = labeler.label(node.id, Query(site, ts, station), params_of[site])
            if t.margin is not None and t.margin < TIE_EPS:
                continue
            if len(by_value[t.value]) >= (MAX_NO_DATA if t.value == "no_data" else TARGET):
                continue
            by_value[t.value].append(
                {
                    "node": node.id,
                    "site": site,
                    "timestamp": iso(ts),
                    "input": {
                        "type": etype.get(node.id),
                        "site": site,
                        "station": station,
                        "timestamp": iso(ts),
                    },
                    "expected": t.value,
                    "observed": _jsonable(t.observed),
                    "threshold": _jsonable(t.threshold),
                    "_ts": ts,
                }
            )
        out[node.id] = _balance(by_value, rng)
    return out


def _balance(by_value: dict[str, list[dict]], rng: np.random.Generator) -> list[dict]:
    nd = by_value["no_data"][:MAX_NO_DATA]
    tr, fa = by_value["true"], by_value["false"]
    half = (TARGET - len(nd)) // 2
    n_true = min(len(tr), max(half, TARGET - len(nd) - len(fa)))
    n_false = min(len(fa), TARGET - len(nd) - n_true)
    chosen = nd + tr[:n_true] + fa[:n_false]
    if len(chosen) < MIN_CASES:
        chosen = (nd + tr + fa)[: max(MIN_CASES, len(chosen))]
    chosen.sort(key=lambda c: (c["_ts"], c["site"], c["input"]["station"] or ""))
    cut = len(chosen) // 2
    for i, c in enumerate(chosen):
        c["split"] = "train" if i < cut else "eval"
        del c["_ts"]
    return chosen
