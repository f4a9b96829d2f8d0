"""Labeled cases per decision node, sampled on purpose where the unstated conventions bite.

Candidates come from random instants, around alarms, and from an edge pool: instants aligned
with window boundaries around every fault's start and end, counter restarts, exact equipment
state changes, shift starts and grace ends, service-age limits. Each candidate is labeled by
the expert labeler and by the wrong variant of every convention that governs the node
(``conventions.py``). Per split (time: the world's first half trains, the second is held out)
a node keeps cases where each wrong variant disagrees, its no-data cases, values within 1%
of the threshold, instants on a sample boundary, every parent-verdict combination seen, and
fills up to ``PER_SPLIT`` balanced between true and false. Labels are always the expert's.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from sopgraph.evals.fc_triage.conventions import EXPERT, governing
from sopgraph.evals.fc_triage.labeler import Labeler
from sopgraph.evals.fc_triage.plant import SHIFT_STARTS_H, T0, TICK_S, iso
from sopgraph.evals.fc_triage.scenarios import TIE_EPS
from sopgraph.evals.fc_triage.truth import STATION_NODES, Query, Truth
from sopgraph.graphs.model import Sop
from sopgraph.graphs.topology import graph_of, parents_of, reach

PER_SPLIT = 90  # cases per node and split: 180 per node
FLIPS = 4  # cases per split where each governing convention's wrong variant disagrees
NO_DATA = 12
NEAR = 8  # within 1% of the threshold
ALIGNED = 8
EDGE_SHARE = 0.4
Candidate = tuple[str, int, str]  # site, epoch seconds, station
# Sampling guidance only (never labels): fault kinds around which a node's rare edges sit;
# their edge candidates are read first for that node.
FOCUS: dict[str, tuple[str, ...]] = {
    "rc_upstream_sensor_silent": ("upstream_sensor_offline",),
    "obs_upstream_flow_low": ("upstream_sensor_offline", "upstream_blockage"),
    "rc_upstream_blockage": ("upstream_sensor_offline", "upstream_blockage"),
    "obs_starvation_sustained": ("upstream_sensor_offline", "upstream_low_volume"),
    "obs_camera_fail_spread": ("camera_glare",),
    "rc_label_stock_low": ("label_stockout", "telemetry_gap"),
    "obs_idle_spread": ("upstream_blockage", "site_stop", "exporter_outage"),
    "obs_pick_error_spread": ("packaging_defect", "camera_glare", "exporter_outage"),
    "ct_downstage_precondition": ("belt_sensor_offline",),
    "rc_belt_sensor_offline": ("belt_sensor_offline",),
    "obs_belt_fill_high": ("belt_sensor_offline", "sorter_jam", "quadrant_backup"),
    "obs_belt_imbalance": ("belt_sensor_offline", "quadrant_backup"),
    "obs_site_throughput_low": ("exporter_outage", "site_stop", "upstream_blockage"),
    "ct_standby_capacity_safe": ("exporter_outage", "site_stop", "robot_fault"),
    "ct_error_rate_critical": ("robot_fault", "robot_standby", "suction_wear", "packaging_defect"),
    "obs_pick_error_high": ("robot_fault", "robot_standby", "suction_wear", "packaging_defect"),
}


def entry_type_of(sop: Sop) -> dict[str, str]:
    """For every node, the first alarm type (in entry order) whose SOP subgraph reaches it."""
    graph = graph_of(sop)
    out: dict[str, str] = {}
    for kind, roots in sop.entry.items():
        for nid in reach(graph, list(roots)):
            out.setdefault(nid, kind)
    return out


def _base_pool(world_sites: dict, alarms: list[dict], rng: np.random.Generator, n_ticks: int):
    """Inside and just after every fault episode, around every alarm, and at random instants."""
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
    off = np.where(rng.random(len(t)) < 0.125, 0, rng.integers(1, TICK_S, len(t)))
    return list(zip(sites, (T0 + t * TICK_S + off).tolist(), stations, strict=True))


def _edge_pool(
    world_sites: dict, params_of: dict, rng: np.random.Generator, n_ticks: int
) -> tuple[list[Candidate], list[str | None]]:
    """Instants where a convention decides the answer, with the fault kind behind each."""
    out: list[Candidate] = []
    kinds: list[str | None] = []
    lo_ts, hi_ts = T0 + 24 * TICK_S, T0 + (n_ticks - 1) * TICK_S

    def add(site: str, ts: int, station: str, kind: str | None = None) -> None:
        if lo_ts <= ts <= hi_ts:
            out.append((site, int(ts), station))
            kinds.append(kind)

    for site, fr in world_sites.items():
        names = fr.stations
        any_station = lambda names=names: names[int(rng.integers(len(names)))]  # noqa: E731
        by_equipment = {}
        for st in fr.stations:
            by_equipment[f"{site}-R{st[2:]}"] = st
            by_equipment[f"{site}-P{st[2:]}"] = st
        for f in fr.faults:
            feeding = [s for s in fr.stations if fr.quadrant[s] == f.quadrant]
            ticks = set(range(f.start - 1, f.start + 9)) | set(range(f.end - 1, f.end + 9))
            if f.kind in ("exporter_outage", "site_stop"):  # whole hours inside and after
                ticks |= set(range(f.start, f.end + 14))
            for k in sorted(ticks):
                st = f.station or (feeding[0] if feeding else any_station())
                add(site, T0 + k * TICK_S, st, f.kind)  # on the sample boundary
                add(site, T0 + k * TICK_S + int(rng.integers(1, TICK_S)), st, f.kind)
        for col in ("upstream_jam_events_total", "sorter_jam_events_total"):
            for k in np.flatnonzero(np.diff(fr.conv[col]) < 0) + 1:
                for j in range(int(k), int(k) + 8):
                    add(site, T0 + j * TICK_S, any_station())
                    add(site, T0 + j * TICK_S + int(rng.integers(1, TICK_S)), any_station())
        for iv in fr.states:
            st = by_equipment.get(iv.equipment_id, any_station())
            add(site, iv.start, st)  # exactly at a state change, asked of it and of another
            add(site, iv.start, any_station())
            add(site, iv.start - 1, st)
        p = params_of[site]
        for day in range(n_ticks * TICK_S // 86400 + 1):
            for h in SHIFT_STARTS_H:
                start = T0 + day * 86400 + h * 3600
                for dt in (0, p["shift_change_grace_min"] * 60, 1800, 3599, 3600):
                    add(site, start + dt, any_station())
        limits = {
            "suction_cup": p["cup_replaced_days"] * 86400,
            "camera_lens": p["lens_clean_hours"] * 3600,
            "print_head": p["print_head_max_days"] * 86400,
        }
        for eq, comp, _act, ts in fr.maintenance:
            st = by_equipment.get(eq, any_station())
            for d in rng.integers(-3 * 3600, 3 * 3600, 3):
                add(site, ts + limits[comp] + int(d), st)
    return out, kinds


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


def _near(t: Truth) -> bool:
    """The statistic lies within 1% of the threshold (but is no rounding tie)."""
    if (
        t.margin is None
        or not isinstance(t.threshold, int | float)
        or isinstance(t.threshold, bool)
    ):
        return False
    return t.margin <= 0.01 * max(abs(float(t.threshold)), 1e-9)


def _zero_denominator(t: Truth) -> bool:
    obs = t.observed if isinstance(t.observed, dict) else {}
    return obs.get("attempts") == 0 or obs.get("previous_hour") == 0


class _Node:
    """One node's labeled candidates per split and the flip quotas still open."""

    def __init__(self, node_id: str, labeler: Labeler, parents: list[str]):
        self.node_id = node_id
        self.convs = governing(node_id)
        self.mutants = {c: labeler.with_conventions(EXPERT.without(c)) for c in self.convs}
        self.parents = parents
        self.rows: dict[str, list[dict]] = {"train": [], "eval": []}
        self.flips = {s: dict.fromkeys(self.convs, 0) for s in self.rows}
        self.scanned = {s: 0 for s in self.rows}
        self.labels = {s: {"true": 0, "false": 0} for s in self.rows}  # rows by expected value

    def add(self, split: str, row: dict) -> None:
        self.rows[split].append(row)
        if row["expected"] in self.labels[split]:
            self.labels[split][row["expected"]] += 1

    def open_flips(self, split: str) -> list[str]:
        return [c for c, n in self.flips[split].items() if n < FLIPS + 1]


def _could_flip(conv: str, ts: int, hints: dict[str, set[int]]) -> bool:
    """A cheap necessary condition for ``conv``'s wrong variant to disagree at ``ts``."""
    if conv in ("window_end_inclusive", "downstage_start_inclusive"):
        return ts % TICK_S == 0  # the two readings differ only on a sample boundary
    if conv in hints:
        return ts in hints[conv]
    return True


def build_cases(
    sop: Sop,
    labeler: Labeler,
    alarms: list[dict],
    params_of: dict[str, dict[str, Any]],
    seed: int,
    scan: int = 260,
    hunt: int = 3000,
) -> dict[str, list[dict]]:
    """Cases per decision node id (``PER_SPLIT`` per split), edge-stratified.

    Each node labels ``scan`` candidates per split, then up to ``hunt`` more that could
    flip a convention whose quota is still open, keeping only those that do.
    """
    world = labeler.world
    etype = entry_type_of(sop)
    split_ts = T0 + world.n_ticks * TICK_S // 2
    decision = {n.id for n in sop.decision_nodes}
    parents = {k: [p for p in v if p in decision] for k, v in parents_of(sop).items()}
    base = _base_pool(world.sites, alarms, np.random.default_rng([seed, 2]), world.n_ticks)
    edges, kinds = _edge_pool(
        world.sites, params_of, np.random.default_rng([seed, 3]), world.n_ticks
    )
    hints = _hints(world, params_of)
    # Edge and base candidates interleaved, two of every three from the edge pool; each node
    # starts reading the shuffled pool at its own offset.
    rng = np.random.default_rng([seed, 4])
    e_idx, b_idx = rng.permutation(len(edges)), rng.permutation(len(base))
    shared: list[Candidate] = []
    for i in range(max(len(e_idx), len(b_idx))):
        if i < len(e_idx):
            shared.append(edges[int(e_idx[i])])
        if i % 2 == 0 and i // 2 < len(b_idx):
            shared.append(base[int(b_idx[i // 2])])
    out: dict[str, list[dict]] = {}
    for node in sop.decision_nodes:
        at = zlib.crc32(node.id.encode()) % len(shared)
        pool = shared[at:] + shared[:at]
        if node.id in FOCUS:  # its focus candidates first, one in two
            want = set(FOCUS[node.id])
            focus = [edges[int(i)] for i in e_idx if kinds[int(i)] in want]
            mixed = [c for pair in zip(focus, pool, strict=False) for c in pair]
            pool = mixed + pool[len(focus) :]
        st = _Node(node.id, labeler, parents.get(node.id, []))
        seen: set[tuple] = set()
        hunted = 0
        balanced = {"train": 0, "eval": 0}
        for site, ts, station in pool:
            split = "train" if ts < split_ts else "eval"
            general = st.scanned[split] < scan
            minority = None
            if not general and balanced[split] < scan * 4:
                counts = st.labels[split]
                low = min(counts, key=counts.get)
                minority = low if counts[low] < PER_SPLIT // 2 - NO_DATA else None
            if minority:
                q = Query(site, ts, station if node.id in STATION_NODES else None)
                if (site, ts, q.station) in seen:
                    continue
                seen.add((site, ts, q.station))
                balanced[split] += 1
                t = labeler.label(node.id, q, params_of[site])
                if t.value != minority or (t.margin is not None and t.margin < TIE_EPS):
                    continue
                st.add(split, _row(node.id, etype, q, t, []))
                continue
            if not general:
                if hunted >= hunt or not any(st.open_flips(s) for s in st.rows):
                    if all(n >= scan for n in st.scanned.values()):
                        break
                    continue
                wanted = [c for c in st.open_flips(split) if _could_flip(c, ts, hints)]
                if not wanted:
                    continue
            q = Query(site, ts, station if node.id in STATION_NODES else None)
            if (site, ts, q.station) in seen:
                continue
            seen.add((site, ts, q.station))
            p = params_of[site]
            t = labeler.label(node.id, q, p)
            if t.margin is not None and t.margin < TIE_EPS:
                continue
            tags = []
            for c in st.open_flips(split):
                if (
                    _could_flip(c, ts, hints)
                    and st.mutants[c].label(node.id, q, p).value != t.value
                ):
                    tags.append(f"flip:{c}")
                    st.flips[split][c] += 1
            if general:
                st.scanned[split] += 1
            else:
                hunted += 1
                if not tags:
                    continue
            if t.value == "no_data":
                tags.append("no_data")
            if ts % TICK_S == 0:
                tags.append("aligned")
            if _zero_denominator(t):
                tags.append("zero_denominator")
            st.add(split, _row(node.id, etype, q, t, tags))
        chosen: list[dict] = []
        for split in ("train", "eval"):
            chosen += _choose(st, st.rows[split], labeler, params_of, split)
        out[node.id] = chosen
    return out


def _row(node_id: str, etype: dict, q: Query, t: Truth, tags: list[str]) -> dict:
    if t.margin is not None and t.margin >= TIE_EPS and _near(t):
        tags.append("near_threshold")
    return {
        "node": node_id, "site": q.site, "timestamp": q.ts,
        "input": {"type": etype.get(node_id), "site": q.site, "station": q.station},
        "expected": t.value, "observed": t.observed, "threshold": t.threshold,
        "edges": tags, "_q": q,
    }  # fmt: skip


def _hints(world, params_of: dict) -> dict[str, set[int]]:
    """Instants where the exact-instant conventions can matter at all."""
    changes = {iv.start for fr in world.sites.values() for iv in fr.states}
    grace = set()
    for site in world.sites:
        g = params_of[site]["shift_change_grace_min"] * 60
        for day in range(world.n_ticks * TICK_S // 86400 + 1):
            for h in SHIFT_STARTS_H:
                grace.add(T0 + day * 86400 + h * 3600 + g)
    return {"state_interval": changes, "shift_grace_exclusive": grace}


def _parents(st: _Node, labeler: Labeler, params_of: dict, row: dict) -> dict[str, str]:
    q: Query = row["_q"]
    out = {}
    for p in st.parents:
        if p in STATION_NODES and q.station is None:
            continue  # a site-wide case: the parent asks about a station it does not name
        out[p] = labeler.label(p, q, params_of[q.site]).value
    return out


def _choose(
    st: _Node, rows: list[dict], labeler: Labeler, params_of: dict, split: str
) -> list[dict]:
    """``PER_SPLIT`` rows: the edge quotas first, then a true/false balance."""
    picked: dict[int, dict] = {}

    def take(match, limit: int) -> None:
        n = sum(1 for r in picked.values() if match(r))
        for i, r in enumerate(rows):
            if n >= limit or len(picked) >= PER_SPLIT:
                return
            if i not in picked and match(r):
                n += 1
                picked[i] = r

    for c in st.convs:
        # Flipping cases of both verdicts where they exist, so a tool wrong either way fails.
        for value in ("true", "false", "no_data"):
            take(lambda r, c=c, v=value: f"flip:{c}" in r["edges"] and r["expected"] == v,
                 (FLIPS + 1) // 2)  # fmt: skip
        take(lambda r, c=c: f"flip:{c}" in r["edges"], FLIPS)
    take(lambda r: "no_data" in r["edges"], NO_DATA)
    take(lambda r: "zero_denominator" in r["edges"], NEAR)
    take(lambda r: "near_threshold" in r["edges"], NEAR)
    take(lambda r: "aligned" in r["edges"], ALIGNED)
    if st.parents:
        combos: dict[tuple, int] = {}
        for i, r in enumerate(rows[: 3 * PER_SPLIT]):
            if len(picked) >= PER_SPLIT:
                break
            r["parents"] = _parents(st, labeler, params_of, r)
            key = tuple(sorted(r["parents"].items()))
            if combos.get(key, 0) < 2:
                combos[key] = combos.get(key, 0) + 1
                picked.setdefault(i, r)
    take(lambda r: bool(r["edges"]), int(EDGE_SHARE * PER_SPLIT))
    for value in ("true", "false"):
        take(lambda r, v=value: r["expected"] == v, (PER_SPLIT - NO_DATA) // 2)
    take(lambda r: True, PER_SPLIT)
    chosen = [picked[i] for i in sorted(picked)]
    for r in chosen:
        if st.parents and "parents" not in r:
            r["parents"] = _parents(st, labeler, params_of, r)
        r.pop("_q")
        r["timestamp"] = r["input"]["timestamp"] = iso(r["timestamp"])
        r["observed"], r["threshold"] = _jsonable(r["observed"]), _jsonable(r["threshold"])
        r["split"] = split
    chosen.sort(key=lambda c: (c["timestamp"], c["site"], c["input"]["station"] or ""))
    return chosen
