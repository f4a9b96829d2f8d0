"""One site's simulated frames as the truth functions read them: windows, lookups and counters,
each under the labeler's conventions (the expert's, or one wrong variant).
"""

from __future__ import annotations

import copy

import numpy as np

from sopgraph.evals.fc_triage.conventions import EXPERT, Conventions
from sopgraph.evals.fc_triage.plant import T0, TICK_S, robot_id
from sopgraph.evals.fc_triage.world import Interval, SiteFrames


class Frames:
    """One site's frames with the lookups the truth functions share, read under ``cv``."""

    def __init__(self, fr: SiteFrames, cv: Conventions = EXPERT):
        self.fr = fr
        self.cv = cv
        self.n = len(fr.conv["upstream_rate_ratio"])
        self.station_index = {s: i for i, s in enumerate(fr.stations)}
        self.intervals: dict[str, list[Interval]] = {}
        for iv in fr.states:
            self.intervals.setdefault(iv.equipment_id, []).append(iv)
        self.events: dict[tuple[str, str], np.ndarray] = {}
        for eq, comp, _act, ts in fr.maintenance:
            self.events.setdefault((eq, comp), []).append(ts)  # type: ignore[arg-type]
        self.events = {k: np.sort(np.array(v)) for k, v in self.events.items()}

    # -- time windows ------------------------------------------------------------------
    def span(self, ts: int, minutes: float, closed: bool = False) -> tuple[int, int]:
        """Tick range [lo, hi) of samples stamped in (ts - minutes, ts] ([..] when closed)."""
        start = ts - int(minutes * 60) - T0
        lo = -(-start // TICK_S) if closed else start // TICK_S + 1
        hi = (ts - T0) // TICK_S + 1
        if not self.cv.window_end_inclusive:  # the wrong variant: [T - N, T)
            lo, hi = -(-start // TICK_S), -(-(ts - T0) // TICK_S)
        return max(lo, 0), min(max(hi, 0), self.n)

    def at_least(self) -> str:
        """The operator of "at least" for counts."""
        return ">=" if self.cv.at_least_inclusive else ">"

    def with_conventions(self, cv: Conventions) -> Frames:
        """The same frames read under other conventions (shares every array)."""
        other = copy.copy(self)
        other.cv = cv
        return other

    def conv(self, column: str, ts: int, minutes: float, closed: bool = False) -> np.ndarray:
        lo, hi = self.span(ts, minutes, closed)
        v = self.fr.conv[column][lo:hi]
        return v if self.cv.nulls_skipped else np.nan_to_num(v, nan=0.0)

    def conv_with_prior(self, column: str, ts: int, minutes: float) -> np.ndarray:
        """Readings stamped in (ts - minutes, ts] plus the reading just before them."""
        lo, hi = self.span(ts, minutes)
        return self.fr.conv[column][max(lo - 1, 0) : hi]

    def robo(
        self, metric: str, station: str, ts: int, minutes: float, closed: bool = False
    ) -> np.ndarray:
        lo, hi = self.span(ts, minutes, closed)
        return self.fr.robo[metric][self.station_index[station], lo:hi]

    # -- ops lookups -------------------------------------------------------------------
    def state_at(self, equipment_id: str, ts: int) -> str | None:
        for iv in self.intervals.get(equipment_id, []):
            if self.cv.state_interval:
                if iv.start <= ts and (iv.end is None or ts < iv.end):
                    return iv.state
            elif iv.start < ts and (iv.end is None or ts <= iv.end):
                return iv.state
        return None

    def robot_state(self, station: str, ts: int) -> str | None:
        return self.state_at(robot_id(self.fr.spec.name, station), ts)

    def last_event(self, equipment_id: str, component: str, ts: int) -> int | None:
        ev = self.events.get((equipment_id, component))
        if ev is None:
            return None
        i = int(np.searchsorted(ev, ts, side="right"))
        return int(ev[i - 1]) if i else None

    def ticket_open(self, equipment_id: str, ts: int, category: str | None = None) -> bool:
        for t in self.fr.tickets:
            if t["equipment_id"] != equipment_id or (category and t["category"] != category):
                continue
            if not self.cv.ticket_at_time:  # the export-time status, wrongly used for T
                if t["opened_at"] <= ts and t["closed_at"] is None:
                    return True
            elif t["opened_at"] <= ts and (t["closed_at"] is None or ts < t["closed_at"]):
                return True
        return False

    def staffing(self, area: str, ts: int) -> tuple[int, int] | None:
        h = (ts - T0) // 3600 if self.cv.hour_floor else (ts - T0 + 1800) // 3600
        planned, present = self.fr.staffing[area]
        if not 0 <= h < len(planned):
            return None
        return int(planned[h]), int(present[h])


def nanmean(v: np.ndarray) -> float | None:
    v = v[v == v]  # drop NaN
    return float(v.sum()) / len(v) if len(v) else None


def counter_steps(v: np.ndarray, cv: Conventions = EXPERT) -> np.ndarray | None:
    """Events per interval of a cumulative counter; a drop is a restart.

    Pass the readings of the window plus the one just before it: each interval's events are
    its reading minus the previous one, or its reading itself after a restart.
    """
    if not cv.counter_cumulative:  # the wrong variant: each reading is the interval's events
        return v[1:]
    if not cv.counter_prior_reading:
        v = v[1:]
    if len(v) < 2:
        return None
    d = np.diff(v)
    return d if not cv.counter_resets else np.where(d >= 0, d, v[1:])


def counter_increase(v: np.ndarray, cv: Conventions = EXPERT) -> float | None:
    """Events counted by a cumulative counter over the window (see ``counter_steps``)."""
    steps = counter_steps(v[~np.isnan(v)], cv)
    return None if steps is None or not len(steps) else float(steps.sum())
