"""The simulated world's data model: per-site frames as the stores keep them.

Conveyance and robotics series are numpy arrays on the 5-minute grid (NaN where the store
holds NULL or no row); equipment states, maintenance, tickets and staffing are records.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sopgraph.evals.fc_triage.faults import Fault
from sopgraph.evals.fc_triage.plant import QUADRANTS, SiteSpec, tick_times

ROBOT_METRICS = (
    "station_idle_pct",
    "pick_attempts",
    "pick_errors",
    "pick_error_pct",
    "units_inducted",
    "suction_vacuum_kpa",
    "camera_read_fail_pct",
    "label_print_fail_pct",
    "label_stock_pct",
)
CONVEYANCE_COLUMNS = (
    "upstream_rate_ratio",
    *(f"belt_{q.lower()}_fill_ratio" for q in QUADRANTS),
    "sorter_throughput_ratio",
    "recirc_ratio",
    "sorter_chutes_full",
    "upstream_jam_events_total",
    "sorter_jam_events_total",
)


@dataclass
class Interval:
    """An equipment state from ``start`` (inclusive) to ``end`` (exclusive; None = ongoing)."""

    equipment_id: str
    equipment_type: str
    state: str
    start: int
    end: int | None


@dataclass
class SiteFrames:
    """Everything simulated for one site."""

    spec: SiteSpec
    stations: list[str]
    quadrant: dict[str, str]
    conv: dict[str, np.ndarray]  # column -> (T,), NaN where the sensor reported nothing
    robo: dict[str, np.ndarray]  # metric -> (S, T), NaN where no sample exists
    states: list[Interval] = field(default_factory=list)
    maintenance: list[tuple[str, str, str, int]] = field(default_factory=list)
    tickets: list[dict] = field(default_factory=list)
    staffing: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    faults: list[Fault] = field(default_factory=list)


@dataclass
class World:
    """The whole simulated dock."""

    seed: int
    days: int
    n_ticks: int
    sites: dict[str, SiteFrames]

    @property
    def end_ts(self) -> int:
        return int(tick_times(self.n_ticks)[-1])
