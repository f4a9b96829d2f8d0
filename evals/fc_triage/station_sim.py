"""Induct stations of one site: robot and printer states, maintenance, tickets and metrics.

A station idles when its robot is not running, when upstream flow starves it, or when the
collector quadrant it feeds is full; its pick errors rise with a worn suction cup, a dirty
camera and failing labels.
"""

from __future__ import annotations

import numpy as np

from sopgraph.evals.fc_triage.plant import (
    T0,
    TICK_S,
    TICKS_PER_DAY,
    printer_id,
    robot_id,
    tick_times,
)
from sopgraph.evals.fc_triage.world import ROBOT_METRICS, Interval, SiteFrames

DAY_S = 86400
STATE_CODES = ("running", "fault", "standby", "maintenance")


def _episodes(frames: SiteFrames, kind: str, station: str | None) -> list:
    return [f for f in frames.faults if f.kind == kind and f.station == station]


def _intervals(
    rng: np.random.Generator, eq: str, eq_type: str, codes: np.ndarray
) -> list[Interval]:
    """Run-length encode per-tick state codes into intervals changing at odd seconds."""
    times = tick_times(len(codes))
    change = np.flatnonzero(np.diff(codes)) + 1
    # A state seen at sample k began somewhere in the 5 minutes that sample covers.
    bounds = [T0 - DAY_S] + [int(times[k]) - int(rng.integers(0, TICK_S)) for k in change]
    starts_k = [0, *change.tolist()]
    out = []
    for i, k in enumerate(starts_k):
        end = bounds[i + 1] if i + 1 < len(bounds) else None
        out.append(Interval(eq, eq_type, STATE_CODES[codes[k]], bounds[i], end))
    return out


def _label_stock(
    rng: np.random.Generator, n: int, demand: np.ndarray, stockout: np.ndarray
) -> np.ndarray:
    stock = np.empty(n)
    level, refill_at = rng.uniform(20, 100), rng.uniform(3, 10)
    use = demand * 0.55 + rng.normal(0, 0.05, n)
    for k in range(n):
        if stockout[k]:
            level = 0.0
        elif level <= refill_at or (k > 0 and stockout[k - 1]):
            level, refill_at = 100.0, rng.uniform(3, 10)
        else:
            level = max(0.0, level - use[k])
        stock[k] = level
    return stock


def _maintenance(
    rng: np.random.Generator, frames: SiteFrames, station: str, n: int
) -> tuple[list[int], list[int], list[int]]:
    """Ticks of suction-cup replacements, lens cleanings and print-head replacements."""
    wear = _episodes(frames, "suction_wear", station)
    dirty = _episodes(frames, "camera_dirty", station)
    in_wear = np.zeros(n, bool)
    for f in wear:
        in_wear[f.start : f.end + 4] = True
    cups = [f.end for f in wear if f.end < n]
    # A defective new cup: some wear starts a day or two after a replacement.
    cups += [
        f.start - int(rng.integers(TICKS_PER_DAY // 2, 2 * TICKS_PER_DAY))
        for f in wear
        if rng.random() < 0.45
    ]
    k = int(rng.integers(0, 12 * TICKS_PER_DAY))
    while k < n:
        if not in_wear[k]:
            cups.append(k)
        k += int(rng.integers(8 * TICKS_PER_DAY, 16 * TICKS_PER_DAY))
    in_dirty = np.zeros(n, bool)
    for f in dirty:
        in_dirty[f.start : f.end] = True
    cleans = [f.end for f in dirty if f.end < n]
    k = int(rng.integers(0, TICKS_PER_DAY))
    while k < n:
        if not in_dirty[k]:
            cleans.append(k)
        k += int(rng.integers(TICKS_PER_DAY // 2, TICKS_PER_DAY))
    heads = []
    k = -int(rng.integers(5 * TICKS_PER_DAY, 60 * TICKS_PER_DAY))
    while k < n:
        heads.append(k)
        k += int(rng.integers(30 * TICKS_PER_DAY, 50 * TICKS_PER_DAY))
    if rng.random() < 0.3:  # installed before the maintenance log began: no earlier record
        heads = [h for h in heads if h >= 0]
    return sorted(c for c in cups if c > -60 * TICKS_PER_DAY), sorted(cleans), heads


def _tickets(rng: np.random.Generator, frames: SiteFrames, times: np.ndarray, end_ts: int) -> None:
    for f in frames.faults:
        if f.kind not in ("robot_fault", "printer_fault") or rng.random() > 0.55:
            continue
        eq = (robot_id if f.kind == "robot_fault" else printer_id)(frames.spec.name, f.station)
        opened = int(times[f.start]) + int(rng.integers(60, 40 * 60))
        closed = int(times[min(f.end, len(times) - 1)]) + int(rng.integers(5 * 60, 60 * 60))
        frames.tickets.append(
            {"equipment_id": eq, "category": f.kind, "opened_at": opened, "closed_at": closed}
        )
    k = int(rng.integers(0, TICKS_PER_DAY))
    while k < len(times):
        opened = int(times[k]) + int(rng.integers(0, TICK_S))
        closed = opened + int(rng.integers(2 * 3600, 10 * 3600))
        frames.tickets.append(
            {
                "equipment_id": frames.spec.name,
                "category": "escalation",
                "opened_at": opened,
                "closed_at": closed,
            }
        )
        k += int(rng.integers(TICKS_PER_DAY, 5 * TICKS_PER_DAY))
    for t in frames.tickets:
        if t["closed_at"] > end_ts:
            t["closed_at"] = None  # still open when the data was exported
    frames.tickets.sort(key=lambda t: t["opened_at"])


def simulate_stations(
    rng: np.random.Generator,
    frames: SiteFrames,
    n: int,
    demand: np.ndarray,
    truth: dict[str, np.ndarray],
) -> None:
    """Fill ``frames.robo``, equipment states, maintenance and tickets for every station."""
    site, stations = frames.spec.name, frames.stations
    s_count = len(stations)
    times = tick_times(n)
    up_lag = np.concatenate([[0.95], truth["upstream_rate_ratio"][:-1]])
    starve = np.clip((0.85 - up_lag) / 0.6, 0, 1) * 100
    glare, defect = np.zeros(n), np.zeros(n)
    for f in frames.faults:
        if f.kind == "camera_glare":
            glare[f.start : f.end] = 4.5 * f.severity
        if f.kind == "packaging_defect":
            defect[f.start : f.end] = 6.0 * f.severity
    robo = {m: np.full((s_count, n), np.nan) for m in ROBOT_METRICS}
    for i, st in enumerate(stations):
        rob, prn = robot_id(site, st), printer_id(site, st)
        cups, cleans, heads = _maintenance(rng, frames, st, n)
        codes = np.zeros(n, dtype=np.int8)
        for f in _episodes(frames, "robot_standby", st):
            codes[f.start : f.end] = 2
        for f in _episodes(frames, "site_stop", None):
            codes[f.start : f.end] = 2
        for c in cups:
            if c >= 0:
                codes[c : c + 3] = 3
        for f in _episodes(frames, "robot_fault", st):
            codes[f.start : f.end] = 1
        pcodes = np.zeros(n, dtype=np.int8)
        for f in _episodes(frames, "printer_fault", st):
            pcodes[f.start : f.end] = 1
        frames.states += _intervals(rng, rob, "robot", codes)
        frames.states += _intervals(rng, prn, "printer", pcodes)
        offs = lambda: int(rng.integers(-TICK_S + 1, 1))  # noqa: E731 - within the interval
        frames.maintenance += [
            (rob, "suction_cup", "replaced", T0 + c * TICK_S + offs()) for c in cups
        ]
        frames.maintenance += [
            (rob, "camera_lens", "cleaned", T0 + c * TICK_S + offs()) for c in cleans
        ]
        frames.maintenance += [
            (prn, "print_head", "replaced", T0 + c * TICK_S + offs()) for c in heads
        ]

        fill = truth[f"belt_{frames.quadrant[st].lower()}_fill_ratio"]
        backed = np.clip((fill - 0.86) / 0.08, 0, 1) * 65
        idle = 3.5 + np.abs(rng.normal(0, 2.5, n)) + starve * rng.uniform(0.85, 1.1) + backed
        idle = np.where(codes != 0, 100.0, np.clip(idle, 0, 100))
        vac = 68 + rng.normal(0, 0.8, n)
        for f in _episodes(frames, "suction_wear", st):
            k = np.arange(f.end - f.start)
            vac[f.start : f.end] -= 20 * f.severity * (k + 1) / (f.end - f.start)
        cam = 0.6 + np.abs(rng.normal(0, 0.25, n)) + glare * rng.uniform(0.3, 1.3)
        for f in _episodes(frames, "camera_dirty", st):
            k = np.arange(f.end - f.start)
            cam[f.start : f.end] += 9 * f.severity * np.minimum(1, (k + 1) / 12)
        stockout = np.zeros(n, bool)
        for f in _episodes(frames, "label_stockout", st):
            stockout[f.start : f.end] = True
        stock = _label_stock(rng, n, demand, stockout)
        label = 0.3 + np.abs(rng.normal(0, 0.2, n))
        label = np.where(stock < 2, 45 + 40 * rng.random(n), label)
        label = np.where(pcodes == 1, 100.0, label)
        attempts = np.round(125 * demand * (1 - idle / 100) * rng.uniform(0.95, 1.05, n))
        # A robot back from a fault, standby or maintenance picks slowly and misses more in
        # its first interval (re-calibration).
        warm = np.zeros(n, bool)
        warm[1:] = (codes[1:] == 0) & (codes[:-1] != 0)
        attempts = np.where(warm, np.round(attempts * 0.2), attempts)
        p = frames.spec.base_pick_error_pct + 1.2 * np.maximum(0, 63 - vac) + 14 * warm
        p = p + defect * rng.uniform(0.5, 1.3)
        p = p + 0.6 * np.maximum(0, cam - 1) + 0.05 * label
        errors = rng.binomial(attempts.astype(np.int64), np.clip(p / 100, 0, 1)).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            err_pct = np.where(attempts > 0, errors / attempts * 100, np.nan)
        values = {
            "station_idle_pct": idle,
            "pick_attempts": attempts,
            "pick_errors": errors,
            "pick_error_pct": err_pct,
            "units_inducted": attempts - errors,
            "suction_vacuum_kpa": vac,
            "camera_read_fail_pct": cam,
            "label_print_fail_pct": label,
            "label_stock_pct": stock,
        }
        gap = np.zeros(n, bool)
        for f in _episodes(frames, "telemetry_gap", st) + _episodes(
            frames, "exporter_outage", None
        ):
            gap[f.start : f.end] = True
        for m, v in values.items():
            robo[m][i] = np.where(gap, np.nan, np.round(v, 2))
    frames.robo = robo
    _tickets(rng, frames, times, int(times[-1]))
