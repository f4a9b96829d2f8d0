"""Ground truth of the nodes that read the robotics metric store (stations and robots)."""

from __future__ import annotations

from typing import Any

import numpy as np

from sopgraph.evals.fc_triage.frames import Frames, nanmean
from sopgraph.evals.fc_triage.truth import Query, Truth, compare, truth


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
    if not f.cv.rate_ratio_of_sums:  # the wrong variant: mean of the per-interval percent
        pct = f.robo("pick_error_pct", station, ts, minutes)
        return "ok", nanmean(pct)
    return "ok", float(err[both].sum()) / total * 100


def _pct(f: Frames, thr: float) -> float:
    """A percent threshold as the robotics metrics are read (0-100, or wrongly 0-1)."""
    return thr if f.cv.robotics_percent else thr / 100


def _missing(f: Frames, thr: Any, observed: Any = None) -> Truth:
    """No robotics rows in the window: no data (wrongly: nothing wrong)."""
    return Truth("no_data" if f.cv.missing_rows_no_data else "false", observed, thr)


def _mean_vs(
    f: Frames, q: Query, metric: str, minutes: float, op: str, thr: float, pct: bool = True
) -> Truth:
    """The station's mean of ``metric`` over the window, compared with ``thr``."""
    m = _mean(f, metric, q, minutes)
    if m is None:
        return _missing(f, thr)
    return compare(m, op, _pct(f, thr) if pct else thr)


def _pick_rate_vs(f: Frames, q: Query, minutes: float, op: str, thr: float) -> Truth:
    """The station's pick error rate over the window, compared with ``thr``."""
    kind, rate = _pick_rate(f, q.station, q.ts, minutes)
    if kind == "no_data":
        return _missing(f, thr)
    if kind == "zero":
        if not f.cv.zero_attempts_false:
            return Truth("no_data", {"attempts": 0}, thr)
        return Truth("false", {"attempts": 0}, thr)
    return compare(rate, op, thr)


def _station_means(f: Frames, metric: str, ts: int, minutes: float) -> dict[str, float]:
    """Every station's mean of ``metric`` over the window; stations without samples left out."""
    lo, hi = f.span(ts, minutes)
    v = f.fr.robo[metric][:, lo:hi]
    n = (~np.isnan(v)).sum(axis=1)
    sums = np.nansum(v, axis=1)
    return {s: float(sums[i]) / int(n[i]) for i, s in enumerate(f.fr.stations) if n[i]}


def _spread(f: Frames, q: Query, metric: str, thr: float, at_least: int, key: str) -> Truth:
    """Whether at least ``at_least`` stations' 15-minute mean of ``metric`` exceeds ``thr``."""
    thr = _pct(f, thr)
    means = _station_means(f, metric, q.ts, 15)
    if not means:
        return _missing(f, at_least)
    if not f.cv.per_entity:  # the wrong variant: the site-wide average against the threshold
        site = float(np.mean(list(means.values())))
        return compare(site, ">", thr)
    high = sorted(s for s, m in means.items() if m > thr)
    margin = min(abs(m - thr) for m in means.values())
    t = compare(len(high), f.at_least(), at_least, {key: high})
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
    lo, hi = f.span(q.ts, 30)
    att = f.fr.robo["pick_attempts"][:, lo:hi]
    err = f.fr.robo["pick_errors"][:, lo:hi]
    both = ~np.isnan(att) & ~np.isnan(err)
    att_sum = np.where(both, att, 0).sum(axis=1)
    err_sum = np.where(both, err, 0).sum(axis=1)
    seen = 0
    errors = attempts = 0.0
    for i, s in enumerate(f.fr.stations):
        if not both[i].any() or att_sum[i] == 0:
            continue  # no samples, or nothing picked: no rate to compare
        if f.cv.rate_ratio_of_sums:
            rate = float(err_sum[i]) / float(att_sum[i]) * 100
        else:
            rate = _pick_rate(f, s, q.ts, 30)[1]
            if rate is None:
                continue
        seen += 1
        errors += float(err_sum[i])
        attempts += float(att_sum[i])
        margin = min(margin, abs(rate - thr))
        if rate > thr:
            high.append(s)
    if not seen:
        return _missing(f, p["pick_spread_min"])
    if not f.cv.per_entity:  # the wrong variant: the site's rate against the threshold
        return compare(errors / attempts * 100, ">", thr)
    t = compare(len(high), f.at_least(), p["pick_spread_min"], {"stations": high})
    return t._replace(margin=margin)


@truth("rc_suction_cup_worn", station=True)
def rc_suction_cup_worn(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    return _mean_vs(f, q, "suction_vacuum_kpa", 30, "<", p["suction_vacuum_min_kpa"], pct=False)


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
        return _missing(f, p["label_stock_min_pct"])
    latest = float(v[-1]) if f.cv.latest_reading else float(v.mean())
    return compare(latest, "<", _pct(f, p["label_stock_min_pct"]))


@truth("obs_site_throughput_low")
def obs_site_throughput_low(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    thr = p["throughput_drop_pct"]
    lo, hi = f.span(q.ts, 60)
    plo, _ = f.span(q.ts, 120)
    units = f.fr.robo["units_inducted"]
    cur, prev = units[:, lo:hi], units[:, plo:lo]
    if np.isnan(cur).all() or np.isnan(prev).all():
        return _missing(f, thr)
    c, pv = float(np.nansum(cur)), float(np.nansum(prev))
    if pv <= 0:
        value = "false" if f.cv.zero_previous_false else "no_data"
        return Truth(value, {"last_hour": c, "previous_hour": pv}, thr)
    base = pv if f.cv.drop_over_previous else c
    if base <= 0:
        return Truth("false", {"last_hour": c, "previous_hour": pv}, thr)
    drop = (pv - c) / base * 100
    return compare(
        drop, ">", thr, {"drop_pct": round(drop, 4), "last_hour": c, "previous_hour": pv}
    )


@truth("ct_standby_capacity_safe", station=True)
def ct_standby_capacity_safe(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    lo, hi = f.span(q.ts, 60)
    units = f.fr.robo["units_inducted"][:, lo:hi]
    if np.isnan(units).all():
        return _missing(f, p["station_rated_uph"])
    flow = int(np.nansum(units)) if f.cv.flow_per_hour else int(np.nansum(units)) // 12
    running = [s for s in f.fr.stations if s != q.station and f.robot_state(s, q.ts) == "running"]
    capacity = len(running) * p["station_rated_uph"]
    obs = {"running_others": len(running), "capacity_uph": capacity, "flow_last_hour": flow}
    return compare(capacity, ">=", flow, obs)
