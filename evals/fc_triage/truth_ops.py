"""Ground truth of the nodes that read the ops store (states, maintenance, tickets, staffing)."""

from __future__ import annotations

from typing import Any

from sopgraph.evals.fc_triage.frames import Frames
from sopgraph.evals.fc_triage.plant import SHIFT_STARTS_H, T0, printer_id, robot_id
from sopgraph.evals.fc_triage.truth import Query, Truth, compare, truth


def _robot(f: Frames, q: Query) -> str:
    return robot_id(q.site, q.station)


def _printer(f: Frames, q: Query) -> str:
    return printer_id(q.site, q.station)


def _in_fault(f: Frames, equipment: str, ts: int) -> Truth:
    """Whether ``equipment`` is in state ``fault`` at ``ts``."""
    state = f.state_at(equipment, ts)
    if state is None:
        return Truth("no_data")
    return Truth("true" if state == "fault" else "false", {"state": state}, "fault")


@truth("rc_robot_fault", station=True)
def rc_robot_fault(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    return _in_fault(f, _robot(f, q), q.ts)


@truth("rc_printer_fault", station=True)
def rc_printer_fault(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    return _in_fault(f, _printer(f, q), q.ts)


@truth("ct_robot_ticket_open", station=True)
def ct_robot_ticket_open(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    return Truth("true" if f.ticket_open(_robot(f, q), q.ts) else "false")


@truth("ct_printer_ticket_open", station=True)
def ct_printer_ticket_open(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    return Truth("true" if f.ticket_open(_printer(f, q), q.ts) else "false")


@truth("ct_escalation_open")
def ct_escalation_open(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    return Truth("true" if f.ticket_open(q.site, q.ts, "escalation") else "false")


@truth("ct_repeat_robot_faults", station=True)
def ct_repeat_robot_faults(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    since = q.ts - 24 * 3600
    if not f.cv.faults_last_24h:  # the wrong variant: "today", since midnight UTC
        since = q.ts - (q.ts - T0) % 86400 - 1
    n = sum(
        1
        for iv in f.intervals.get(_robot(f, q), [])
        if iv.state == "fault" and since < iv.start <= q.ts
    )
    return compare(n, f.at_least(), p["repeat_fault_count"], {"faults_24h": n})


@truth("rc_stations_down")
def rc_stations_down(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    down = sorted(s for s in f.fr.stations if f.robot_state(s, q.ts) not in ("running", None))
    return compare(len(down), f.at_least(), p["stations_down_min"], {"stations": down})


def _since_event(f: Frames, eq: str, component: str, ts: int) -> int | None:
    last = f.last_event(eq, component, ts)
    return None if last is None else ts - last


def _older(f: Frames, age: int, ts: int, limit: float, unit_s: int) -> tuple[bool, bool]:
    """(age < limit, age > limit) in ``unit_s`` units: exact, or wrongly by calendar units."""
    if f.cv.service_age_exact:
        return age < limit * unit_s, age > limit * unit_s
    whole = (ts - T0) // unit_s - (ts - age - T0) // unit_s
    return whole < limit, whole > limit


def _serviced_within(f: Frames, q: Query, component: str, limit: float, unit_s: int) -> Truth:
    """Whether the station robot's ``component`` was serviced less than ``limit`` units ago."""
    age = _since_event(f, _robot(f, q), component, q.ts)
    recent = age is not None and _older(f, age, q.ts, limit, unit_s)[0]
    return Truth("true" if recent else "false", {"age_s": age}, limit)


@truth("ct_cup_recently_replaced", station=True)
def ct_cup_recently_replaced(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    return _serviced_within(f, q, "suction_cup", p["cup_replaced_days"], 86400)


@truth("ct_lens_cleaned_recently", station=True)
def ct_lens_cleaned_recently(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    return _serviced_within(f, q, "camera_lens", p["lens_clean_hours"], 3600)


@truth("rc_print_head_worn", station=True)
def rc_print_head_worn(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    age = _since_event(f, _printer(f, q), "print_head", q.ts)
    worn = (
        f.cv.no_record_worn
        if age is None
        else _older(f, age, q.ts, p["print_head_max_days"], 86400)[1]
    )
    return Truth("true" if worn else "false", {"age_s": age}, p["print_head_max_days"])


def _staff(f: Frames, q: Query, area: str) -> tuple[int, int] | None:
    return f.staffing(area, q.ts)


@truth("rc_pack_out_understaffed")
def rc_pack_out_understaffed(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    row = _staff(f, q, "pack_out")
    if row is None:
        return Truth("no_data", None, p["staffing_min_pct"])
    planned, present = row
    # present < planned * pct / 100, kept in integers so no rounding can decide it.
    if f.cv.staffing_integers:
        short = present * 100 < planned * p["staffing_min_pct"]
    else:  # the wrong variant: the floor of the needed headcount
        short = present < planned * p["staffing_min_pct"] // 100
    obs = {"planned": planned, "present": present}
    return Truth("true" if short else "false", obs, p["staffing_min_pct"])


@truth("ct_labor_pool_available")
def ct_labor_pool_available(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    row = _staff(f, q, "float")
    if row is None:
        return Truth("no_data", None, p["min_float_staff"])
    return compare(row[1], f.at_least(), p["min_float_staff"], {"float_present": row[1]})


@truth("ct_shift_change_window")
def ct_shift_change_window(f: Frames, q: Query, p: dict[str, Any]) -> Truth:
    sec_of_day = (q.ts - T0) % 86400
    starts = [h * 3600 for h in SHIFT_STARTS_H]
    since = min((sec_of_day - s) % 86400 for s in starts)
    grace = p["shift_change_grace_min"] * 60
    inside = since < grace if f.cv.shift_grace_exclusive else since <= grace
    return Truth("true" if inside else "false", {"minutes_into_shift": since / 60}, None)
