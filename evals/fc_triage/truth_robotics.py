"""Ground truth of the nodes that read the robotics metric store (stations and robots)."""

from __future__ import annotations

from typing import Any

import numpy as np

from evals.fc_triage.labeler import Frames, Query, Truth, compare, nanmean, truth


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


@truth("obs_station_idle", station=True)
def obs_station_idle(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    m = _mean(f, "station_idle_pct", q, 15)
    if m is None:
        return Truth("no_data", None, p["idle_pct_threshold"])
    return compare(m, ">", p["idle_pct_threshold"])


@truth("rc_robot_telemetry_gap", station=True)
def rc_robot_telemetry_gap(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    v = f.robo("station_idle_pct", q.station, q.ts, 15)
    n = int((~np.isnan(v)).sum())
    return Truth("true" if n == 0 else "false", {"samples": n}, 0)


@truth("obs_idle_spread")
def obs_idle_spread(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    thr = p["idle_pct_threshold"]
    means = {s: _mean(f, "station_idle_pct", Query(q.site, q.ts, s), 15) for s in f.fr.stations}
    means = {s: m for s, m in means.items() if m is not None}
    if not means:
        return Truth("no_data", None, p["min_idle_stations"])
    idle = sorted(s for s, m in means.items() if m > thr)
    margin = min(abs(m - thr) for m in means.values())
    t = compare(len(idle), ">=", p["min_idle_stations"], {"idle_stations": idle})
    return t._replace(margin=margin)


@truth("obs_pick_error_high", station=True)
def obs_pick_error_high(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    kind, rate = _pick_rate(f, q.station, q.ts, 30)
    thr = p["pick_error_pct_threshold"]
    if kind == "no_data":
        return Truth("no_data", None, thr)
    if kind == "zero":
        return Truth("false", {"attempts": 0}, thr)
    return compare(rate, ">", thr)


@truth("ct_error_rate_critical", station=True)
def ct_error_rate_critical(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    kind, rate = _pick_rate(f, q.station, q.ts, 15)
    thr = p["critical_pick_error_pct"]
    if kind == "no_data":
        return Truth("no_data", None, thr)
    if kind == "zero":
        return Truth("false", {"attempts": 0}, thr)
    return compare(rate, ">=", thr)


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
    m = _mean(f, "suction_vacuum_kpa", q, 30)
    if m is None:
        return Truth("no_data", None, p["suction_vacuum_min_kpa"])
    return compare(m, "<", p["suction_vacuum_min_kpa"])


@truth("rc_camera_degraded", station=True)
def rc_camera_degraded(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    m = _mean(f, "camera_read_fail_pct", q, 30)
    if m is None:
        return Truth("no_data", None, p["camera_fail_pct_threshold"])
    return compare(m, ">", p["camera_fail_pct_threshold"])


@truth("obs_camera_fail_high", station=True)
def obs_camera_fail_high(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    m = _mean(f, "camera_read_fail_pct", q, 15)
    if m is None:
        return Truth("no_data", None, p["camera_alarm_pct"])
    return compare(m, ">", p["camera_alarm_pct"])


@truth("obs_camera_fail_spread")
def obs_camera_fail_spread(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    thr = p["camera_alarm_pct"]
    means = {s: _mean(f, "camera_read_fail_pct", Query(q.site, q.ts, s), 15) for s in f.fr.stations}
    means = {s: m for s, m in means.items() if m is not None}
    if not means:
        return Truth("no_data", None, p["camera_spread_min"])
    high = sorted(s for s, m in means.items() if m > thr)
    margin = min(abs(m - thr) for m in means.values())
    t = compare(len(high), ">=", p["camera_spread_min"], {"stations": high})
    return t._replace(margin=margin)


@truth("rc_label_defects", station=True)
def rc_label_defects(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    m = _mean(f, "label_print_fail_pct", q, 30)
    if m is None:
        return Truth("no_data", None, p["label_fail_pct_threshold"])
    return compare(m, ">", p["label_fail_pct_threshold"])


@truth("obs_label_fail_high", station=True)
def obs_label_fail_high(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    m = _mean(f, "label_print_fail_pct", q, 15)
    if m is None:
        return Truth("no_data", None, p["label_fail_pct_threshold"])
    return compare(m, ">", p["label_fail_pct_threshold"])


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
