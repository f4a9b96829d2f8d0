"""Ground truth of the nodes that read the robotics metric store (stations and robots)."""

from __future__ import annotations

from typing import Any

import numpy as np

from sopgraph.evals.fc_triage.labeler import Frames, Query, Truth, compare, nanmean, truth


def _mean(f: Frames, metric: str, q: Query, minutes: float) -> float | None:
    return nanmean(f.robo(metric, q.station, q.ts, minutes))


def _pick_rate(f: Frames, station: str, ts: int, minutes: float) -> tuple[str, float | None]:
    """Pick error rate as errors over attempts summed over the window (not a mean of %)."""
    att = f.robo("pick_attempts", station, ts, minutes)
    err = f.robo("pick_errors", station, ts, minutes)
    both = ~np.isnan(att) & ~np.isnan(err)
    if not both.any():
        return "no_data", None
    total = float(att[both].sum())
    if total == 0:
        return "zero", None
    return "ok", float(err[both].sum()) / total * 100


def _mean_vs(f: Frames, q: Query, metric: str, minutes: float, op: str, thr: float) -> Truth:
    """The station's mean of ``metric`` over the window, compared with ``thr``."""
    m = _mean(f, metric, q, minutes)
    if m is None:
        return Truth("no_data", None, thr)
    return compare(m, op, thr)


def _pick_rate_vs(f: Frames, q: Query, minutes: float, op: str, thr: float) -> Truth:
    """The station's pick error rate over the window, compared with ``thr``."""
    kind, rate = _pick_rate(f, q.station, q.ts, minutes)
    if kind == "no_data":
        return Truth("no_data", None, thr)
    if kind == "zero":
        return Truth("false", {"attempts": 0}, thr)
    return compare(rate, op, thr)


def _spread(f: Frames, q: Query, metric: str, thr: float, at_least: int, key: str) -> Truth:
    """Whether at least ``at_least`` stations' 15-minute mean of ``metric`` exceeds ``thr``."""
    means = {s: _mean(f, metric, Query(q.site, q.ts, s), 15) for s in f.fr.stations}
    means = {s: m for s, m in means.items() if m is not None}
    if not means:
        return Truth("no_data", None, at_least)
    high = sorted(s for s, m in means.items() if m > thr)
    margin = min(abs(m - thr) for m in means.values())
    t = compare(len(high), ">=", at_least, {key: high})
    return t._replace(margin=margin)


@truth("obs_station_idle", station=True)
def obs_station_idle(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    return _mean_vs(f, q, "station_idle_pct", 15, ">", p["idle_pct_threshold"])


@truth("rc_robot_telemetry_gap", station=True)
def rc_robot_telemetry_gap(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    v = f.robo("station_idle_pct", q.station, q.ts, 15)
    n = int((~np.isnan(v)).sum())
    return Truth("true" if n == 0 else "false", {"samples": n}, 0)


@truth("obs_idle_spread")
def obs_idle_spread(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    thr, at_least = p["idle_pct_threshold"], p["min_idle_stations"]
    return _spread(f, q, "station_idle_pct", thr, at_least, "idle_stations")


@truth("obs_pick_error_high", station=True)
def obs_pick_error_high(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    return _pick_rate_vs(f, q, 30, ">", p["pick_error_pct_threshold"])


@truth("ct_error_rate_critical", station=True)
def ct_error_rate_critical(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    return _pick_rate_vs(f, q, 15, ">=", p["critical_pick_error_pct"])


@truth("obs_pick_error_spread")
def obs_pick_error_spread(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    thr = p["pick_error_pct_threshold"]
    high, margin = [], float("inf")
    seen = 0
    for s in f.fr.stations:
        kind, rate = _pick_rate(f, s, q.ts, 30)
        if kind != "ok":
            continue
        seen += 1
        margin = min(margin, abs(rate - thr))
        if rate > thr:
            high.append(s)
    if not seen:
        return Truth("no_data", None, p["pick_spread_min"])
    t = compare(len(high), ">=", p["pick_spread_min"], {"stations": high})
    return t._replace(margin=margin)


@truth("rc_suction_cup_worn", station=True)
def rc_suction_cup_worn(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    return _mean_vs(f, q, "suction_vacuum_kpa", 30, "<", p["suction_vacuum_min_kpa"])


@truth("rc_camera_degraded", station=True)
def rc_camera_degraded(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    return _mean_vs(f, q, "camera_read_fail_pct", 30, ">", p["camera_fail_pct_threshold"])


@truth("obs_camera_fail_high", station=True)
def obs_camera_fail_high(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    return _mean_vs(f, q, "camera_read_fail_pct", 15, ">", p["camera_alarm_pct"])


@truth("obs_camera_fail_spread")
def obs_camera_fail_spread(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    thr, at_least = p["camera_alarm_pct"], p["camera_spread_min"]
    return _spread(f, q, "camera_read_fail_pct", thr, at_least, "stations")


@truth("rc_label_defects", station=True)
def rc_label_defects(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    return _mean_vs(f, q, "label_print_fail_pct", 30, ">", p["label_fail_pct_threshold"])


@truth("obs_label_fail_high", station=True)
def obs_label_fail_high(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    return _mean_vs(f, q, "label_print_fail_pct", 15, ">", p["label_fail_pct_threshold"])


@truth("rc_label_stock_low", station=True)
def rc_label_stock_low(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    v = f.robo("label_stock_pct", q.station, q.ts, 15)
    v = v[~np.isnan(v)]
    if not len(v):
        return Truth("no_data", None, p["label_stock_min_pct"])
    return compare(float(v[-1]), "<", p["label_stock_min_pct"])


@truth("obs_site_throughput_low")
def obs_site_throughput_low(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    thr = p["throughput_drop_pct"]
    lo, hi = f.span(q.ts, 60)
    plo, _ = f.span(q.ts, 120)
    units = f.fr.robo["units_inducted"]
    cur, prev = units[:, lo:hi], units[:, plo:lo]
    if np.isnan(cur).all() or np.isnan(prev).all():
        return Truth("no_data", None, thr)
    c, pv = float(np.nansum(cur)), float(np.nansum(prev))
    if pv <= 0:
        return Truth("false", {"last_hour": c, "previous_hour": pv}, thr)
    drop = (pv - c) / pv * 100
    return compare(
        drop, ">", thr, {"drop_pct": round(drop, 4), "last_hour": c, "previous_hour": pv}
    )


@truth("ct_standby_capacity_safe", station=True)
def ct_standby_capacity_safe(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    lo, hi = f.span(q.ts, 60)
    units = f.fr.robo["units_inducted"][:, lo:hi]
    if np.isnan(units).all():
        return Truth("no_data", None, p["station_rated_uph"])
    flow = int(np.nansum(units))
    running = [s for s in f.fr.stations if s != q.station and f.robot_state(s, q.ts) == "running"]
    capacity = len(running) * p["station_rated_uph"]
    obs = {"running_others": len(running), "capacity_uph": capacity, "flow_last_hour": flow}
    return compare(capacity, ">=", flow, obs)
