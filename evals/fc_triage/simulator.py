"""The simulated outbound dock: weeks of 5-minute metrics per site, with cascading faults.

One seed gives one world. Faults cascade as on a real dock: an upstream blockage starves
the induct stations (idle rises) and drains the collector belt; a sorter jam or a pack-out
staffing shortfall backs the belt up, and a full quadrant idles the stations feeding it; a
worn suction cup lowers vacuum and raises pick errors; an empty label roll or a printer
fault makes labels fail. Values are rounded as the stores keep them, so the arrays here are
exactly what the MCP servers serve.
"""

from __future__ import annotations

import numpy as np

from sopgraph.evals.fc_triage.faults import Fault, schedule_faults
from sopgraph.evals.fc_triage.plant import (
    QUADRANTS,
    SITES,
    TICK_S,
    TICKS_PER_DAY,
    SiteSpec,
    quadrant_of,
    station_ids,
)
from sopgraph.evals.fc_triage.station_sim import simulate_stations
from sopgraph.evals.fc_triage.world import SiteFrames, World


def _demand(n: int) -> np.ndarray:
    """Diurnal volume factor in [0.45, 0.95] peaking mid-afternoon, a little lower at weekends."""
    t = np.arange(n)
    hour = (t % TICKS_PER_DAY) * TICK_S / 3600
    day = (t // TICKS_PER_DAY) % 7
    d = 0.7 + 0.25 * np.sin(2 * np.pi * (hour - 9) / 24)
    return d * np.where(day >= 5, 0.9, 1.0)


def _ramp(n: int, faults: list[Fault], kind: str, rise: int = 3) -> np.ndarray:
    """0..1 per tick: rises over ``rise`` ticks at each episode start, scaled by severity."""
    out = np.zeros(n)
    for f in faults:
        if f.kind != kind:
            continue
        k = np.arange(f.end - f.start)
        out[f.start : f.end] = np.maximum(
            out[f.start : f.end], np.minimum(1.0, (k + 1) / rise) * f.severity
        )
    return out


def _counter(rng: np.random.Generator, rate: np.ndarray, resets: np.ndarray) -> np.ndarray:
    """A cumulative event counter that restarts from zero at each reset tick."""
    inc = rng.poisson(rate).astype(np.float64)
    total = np.cumsum(inc)
    # Subtract the running total just before the latest reset: a per-segment cumsum.
    base = np.where(resets, total - inc, np.nan)
    base[0] = 0.0
    idx = np.where(~np.isnan(base), np.arange(len(base)), 0)
    np.maximum.accumulate(idx, out=idx)
    return total - base[idx]


def _conveyance(
    rng: np.random.Generator, n: int, faults: list[Fault]
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Conveyance columns as stored, and the true flow/fill behind any sensor outage."""
    d = _demand(n)
    block = _ramp(n, faults, "upstream_blockage", 2)
    low = _ramp(n, faults, "upstream_low_volume", 4)
    jam = _ramp(n, faults, "sorter_jam", 2)
    short = _ramp(n, faults, "staffing_shortfall", 6)
    up = np.clip(0.95 + rng.normal(0, 0.02, n), 0.85, 1.02)
    up = up * (1 - 0.8 * block) * (1 - 0.45 * low)
    hour = (np.arange(n) % TICKS_PER_DAY) * TICK_S // 3600
    minute0 = (np.arange(n) % (3600 // TICK_S)) == 0
    daily_reset = (hour == 6) & minute0
    plc_reset = rng.random(n) < 1 / (5 * TICKS_PER_DAY)
    out: dict[str, np.ndarray] = {"upstream_rate_ratio": up}
    flow = np.minimum(1.0, up / 0.95)
    for q in QUADRANTS:
        qb = np.zeros(n)
        for f in faults:
            if f.kind == "quadrant_backup" and f.quadrant == q:
                k = np.arange(f.end - f.start)
                qb[f.start : f.end] = np.minimum(1.0, (k + 1) / 3) * f.severity
        base = 0.22 + 0.18 * d + rng.normal(0, 0.04, n)
        fill = base * (0.35 + 0.65 * flow) + 0.62 * jam + 0.6 * short + 0.62 * qb
        out[f"belt_{q.lower()}_fill_ratio"] = np.clip(fill, 0.02, 0.99)
    out["sorter_throughput_ratio"] = np.clip(
        0.93 + rng.normal(0, 0.025, n) - 0.55 * jam - 0.12 * short, 0.05, 1.0
    )
    out["recirc_ratio"] = np.clip(0.04 + rng.normal(0, 0.012, n) + 0.2 * jam + 0.1 * short, 0, 1)
    out["sorter_chutes_full"] = rng.poisson(1.2 + 4 * jam + 8 * short).astype(np.float64)
    # Operators often restart the controller to clear a jam: a reset inside the episode.
    clear = {kind: np.zeros(n, dtype=bool) for kind in ("upstream_blockage", "sorter_jam")}
    for f in faults:
        if f.kind in clear and f.end - f.start > 2 and rng.random() < 0.6:
            clear[f.kind][int(rng.integers(f.start + 1, f.end))] = True
    up_resets = daily_reset | plc_reset | clear["upstream_blockage"]
    sorter_resets = daily_reset | plc_reset | clear["sorter_jam"]
    out["upstream_jam_events_total"] = _counter(rng, 0.03 + 1.1 * block, up_resets)
    out["sorter_jam_events_total"] = _counter(rng, 0.04 + 2.2 * jam, sorter_resets)
    for name in ("upstream_rate_ratio", *(f"belt_{q.lower()}_fill_ratio" for q in QUADRANTS)):
        out[name] = np.round(out[name], 4)
    for name in ("sorter_throughput_ratio", "recirc_ratio"):
        out[name] = np.round(out[name], 4)
    truth = {k: v.copy() for k, v in out.items()}
    for f in faults:
        if f.kind == "belt_sensor_offline":
            qs = [f.quadrant] if f.quadrant else list(QUADRANTS)
            for q in qs:
                out[f"belt_{q.lower()}_fill_ratio"][f.start : f.end] = np.nan
        if f.kind == "upstream_sensor_offline":
            out["upstream_rate_ratio"][f.start : f.end] = np.nan
    return out, truth


def _staffing(
    rng: np.random.Generator, spec: SiteSpec, n: int, faults: list[Fault]
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    hours = n * TICK_S // 3600
    hod = np.arange(hours) % 24
    day = (hod >= 6) & (hod < 18)
    short = np.zeros(hours)
    for f in faults:
        if f.kind == "staffing_shortfall":
            a, b = f.start * TICK_S // 3600, -(-f.end * TICK_S // 3600)
            short[a:b] = np.maximum(short[a:b], f.severity)
    planned_po = np.where(day, spec.pack_out_day, spec.pack_out_night)
    present_po = planned_po - rng.binomial(2, 0.3, hours)
    present_po = np.where(short > 0, np.round(planned_po * (0.75 - 0.3 * short)), present_po)
    planned_in = np.where(day, 8, 6)
    present_in = planned_in - rng.binomial(2, 0.25, hours)
    planned_fl = np.where(day, 4, 3)
    present_fl = rng.binomial(planned_fl + 1, 0.5)
    return {
        "pack_out": (planned_po.astype(int), present_po.astype(int)),
        "induct": (planned_in.astype(int), present_in.astype(int)),
        "float": (planned_fl.astype(int), present_fl.astype(int)),
    }


def simulate_site(rng: np.random.Generator, spec: SiteSpec, n: int) -> SiteFrames:
    """One site's frames: conveyance, stations, equipment states, tickets and staffing."""
    faults = schedule_faults(rng, spec, n)
    stations = station_ids(spec)
    quadrant = {s: quadrant_of(i, len(stations)) for i, s in enumerate(stations)}
    conv, truth = _conveyance(rng, n, faults)
    frames = SiteFrames(spec, stations, quadrant, conv, {}, faults=faults)
    frames.staffing = _staffing(rng, spec, n, faults)
    simulate_stations(rng, frames, n, _demand(n), truth)
    return frames


def simulate(seed: int = 7, days: int = 28, sites: int | None = None) -> World:
    """Simulate ``days`` days of every site (or the first ``sites`` sites)."""
    rng = np.random.default_rng(seed)
    n = days * TICKS_PER_DAY
    chosen = SITES[: sites or len(SITES)]
    frames = {}
    for spec in chosen:
        frames[spec.name] = simulate_site(np.random.default_rng(rng.integers(2**63)), spec, n)
    return World(seed, days, n, frames)
