"""Ground truth of the nodes that read the conveyance warehouse (upstream, belt, sorter)."""

from __future__ import annotations

from typing import Any

import numpy as np

from sopgraph.evals.fc_triage.frames import Frames, counter_increase, counter_steps, nanmean
from sopgraph.evals.fc_triage.plant import QUADRANTS, TICK_S
from sopgraph.evals.fc_triage.truth import Query, Truth, compare, truth


def _fill_col(q: str) -> str:
    return f"belt_{q.lower()}_fill_ratio"


def _as_ratio(f: Frames, pct: float) -> float:
    """A percent threshold in the 0-1 unit of the conveyance ratios."""
    return pct / 100 if f.cv.ratio_units else pct


def _ratio_below(f: Frames, q: Query, column: str, minutes: float, pct: float) -> Truth:
    m = nanmean(f.conv(column, q.ts, minutes))
    if m is None:
        return Truth("no_data", None, pct)
    return compare(m, "<", _as_ratio(f, pct))


def _ratio_above(f: Frames, q: Query, column: str, minutes: float, pct: float) -> Truth:
    m = nanmean(f.conv(column, q.ts, minutes))
    if m is None:
        return Truth("no_data", None, pct)
    return compare(m, ">", _as_ratio(f, pct))


def _jams(f: Frames, q: Query, column: str, minutes: float, at_least: int) -> Truth:
    n = counter_increase(f.conv_with_prior(column, q.ts, minutes), f.cv)
    if n is None:
        return Truth("no_data", None, at_least)
    return compare(int(n), f.at_least(), at_least, {"jams": int(n)})


@truth("rc_upstream_blockage")
def rc_upstream_blockage(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    return _ratio_below(f, q, "upstream_rate_ratio", 15, p["upstream_block_pct"])


@truth("obs_upstream_flow_low")
def obs_upstream_flow_low(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    return _ratio_below(f, q, "upstream_rate_ratio", 15, p["upstream_flow_min_pct"])


@truth("rc_upstream_sensor_silent")
def rc_upstream_sensor_silent(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    v = f.conv("upstream_rate_ratio", q.ts, p["sensor_silent_min"])
    gone = np.isnan(v).all() if f.cv.silent_any_vs_all else np.isnan(v).any()
    silent = bool(len(v)) and bool(gone)
    return Truth("true" if silent else "false", {"readings": int((~np.isnan(v)).sum())}, 0)


@truth("obs_starvation_sustained")
def obs_starvation_sustained(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    v = f.conv("upstream_rate_ratio", q.ts, 45)
    v = v[~np.isnan(v)]
    need, thr = p["starvation_min_readings"], _as_ratio(f, p["upstream_flow_min_pct"])
    if len(v) < need:
        return Truth("no_data", {"readings": len(v)}, need)
    worst = float(v.max())
    return compare(worst, "<", thr, {"readings": len(v), "max_ratio": worst})


@truth("rc_upstream_jam")
def rc_upstream_jam(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    return _jams(f, q, "upstream_jam_events_total", 30, p["upstream_jam_min"])


@truth("rc_sorter_jam")
def rc_sorter_jam(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    return _jams(f, q, "sorter_jam_events_total", 30, p["sorter_jam_min"])


@truth("obs_sorter_jams")
def obs_sorter_jams(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    return _jams(f, q, "sorter_jam_events_total", 30, p["sorter_jam_alarm_min"])


@truth("ct_sorter_jam_persistent")
def ct_sorter_jam_persistent(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    k = p["jam_persist_intervals"]
    v = f.conv_with_prior("sorter_jam_events_total", q.ts, k * TICK_S / 60)
    if len(v) < k + 1 or np.isnan(v).any():
        return Truth("no_data", None, k)
    inc = counter_steps(v, f.cv)
    if inc is None or not len(inc):
        return Truth("no_data", None, k)
    return Truth("true" if (inc > 0).all() else "false", {"jams_per_interval": inc.tolist()}, k)


@truth("rc_sorter_throughput_low")
def rc_sorter_throughput_low(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    return _ratio_below(f, q, "sorter_throughput_ratio", 15, p["sorter_tput_min_pct"])


@truth("rc_recirc_high")
def rc_recirc_high(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    return _ratio_above(f, q, "recirc_ratio", 15, p["recirc_max_pct"])


@truth("rc_chutes_full")
def rc_chutes_full(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    v = f.conv("sorter_chutes_full", q.ts, 10)
    v = v[~np.isnan(v)]
    if not len(v):
        return Truth("no_data", None, p["chutes_full_min"])
    latest = int(v[-1]) if f.cv.latest_reading else float(v.mean())
    return compare(latest, f.at_least(), p["chutes_full_min"])


@truth("rc_quadrant_backed_up", station=True)
def rc_quadrant_backed_up(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    quad = f.fr.quadrant[q.station]
    t = _ratio_above(f, q, _fill_col(quad), 10, p["quadrant_full_pct"])
    return t._replace(observed={"quadrant": quad, "fill": t.observed})


def _quadrant_means(f: Frames, q: Query) -> dict[str, float]:
    means = {qd: nanmean(f.conv(_fill_col(qd), q.ts, 10)) for qd in QUADRANTS}
    if not f.cv.silent_quadrant_skipped and any(m is None for m in means.values()):
        return {}
    return {qd: m for qd, m in means.items() if m is not None}


@truth("obs_belt_fill_high")
def obs_belt_fill_high(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    thr = _as_ratio(f, p["belt_fill_high_pct"])
    means = _quadrant_means(f, q)
    if not means:
        return Truth("no_data", None, p["belt_fill_high_pct"])
    if not f.cv.quadrant_each:  # the wrong variant: the whole belt's mean
        whole = nanmean(np.concatenate([f.conv(_fill_col(qd), q.ts, 10) for qd in QUADRANTS]))
        return compare(whole, ">", thr)
    high = sorted(qd for qd, m in means.items() if m > thr)
    margin = min(abs(m - thr) for m in means.values())
    obs = {qd: round(m, 6) for qd, m in means.items()} | {"high": high}
    return Truth("true" if high else "false", obs, p["belt_fill_high_pct"], margin)


@truth("rc_belt_sensor_offline")
def rc_belt_sensor_offline(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    gone = (
        (lambda v: np.isnan(v).any()) if f.cv.silent_any_vs_all else (lambda v: np.isnan(v).all())
    )
    missing = sorted(qd for qd in QUADRANTS if gone(f.conv(_fill_col(qd), q.ts, 15)))
    return Truth("true" if missing else "false", {"quadrants": missing}, 0)


@truth("obs_belt_imbalance")
def obs_belt_imbalance(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    means = _quadrant_means(f, q)
    north = [means[qd] for qd in ("NW", "NE") if qd in means]
    south = [means[qd] for qd in ("SW", "SE") if qd in means]
    if not north or not south:
        return Truth("no_data", None, p["belt_imbalance_pct"])
    n, s = float(np.mean(north)), float(np.mean(south))
    gap = abs(n - s) * 100 if f.cv.imbalance_points else abs(n - s) / max(n, s, 1e-9) * 100
    return compare(gap, ">", p["belt_imbalance_pct"])


@truth("ct_downstage_precondition")
def ct_downstage_precondition(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    """Appendix D: per quadrant, the 5 minutes up to its latest reading, none older than 10."""
    lo, hi = f.span(q.ts, 10, closed=f.cv.downstage_start_inclusive)
    avgs: dict[str, float] = {}
    for qd in QUADRANTS:
        v = f.fr.conv[_fill_col(qd)][lo:hi]
        idx = np.flatnonzero(~np.isnan(v))
        if not len(idx):
            return Truth("no_data", {"missing": qd}, None)
        last = idx[-1]
        # Readings stamped in [latest - 5 min, latest]: the latest and the one before it.
        window = v[max(0, last - 1) : last + 1]
        avgs[qd] = float(np.nanmean(window))
    scale = 100 if f.cv.ratio_units else 1
    north = (avgs["NW"] + avgs["NE"]) / 2 * scale
    south = (avgs["SW"] + avgs["SE"]) / 2 * scale
    nthr, sthr = p["downstage_north_max_pct"], p["downstage_south_max_pct"]
    holds = north <= nthr and south <= sthr
    margin = min(abs(north - nthr), abs(south - sthr))
    obs = {"north_pct": round(north, 4), "south_pct": round(south, 4)}
    return Truth("true" if holds else "false", obs, {"north": nthr, "south": sthr}, margin)
