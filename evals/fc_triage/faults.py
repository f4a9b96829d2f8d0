"""The fault schedule: which failures happen where and when in the simulated weeks.

Counts are given per 28 days and scale with the simulated length; placement is drawn from
the seeded generator, so one seed gives one schedule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sopgraph.evals.fc_triage.plant import QUADRANTS, TICKS_PER_DAY, SiteSpec, station_ids

# kind -> (episodes per site per 28 days, min ticks, max ticks, per-station?)
FAULT_KINDS: dict[str, tuple[float, int, int, bool]] = {
    "upstream_blockage": (12, 6, 24, False),  # upstream conveyance jammed: flow collapses
    "upstream_low_volume": (9, 12, 36, False),  # light inbound: flow low, no jams
    "sorter_jam": (10, 4, 18, False),  # sorter jams: throughput falls, belt fills
    "staffing_shortfall": (7, 24, 60, False),  # pack-out short of staff: belt backs up
    "quadrant_backup": (8, 4, 16, False),  # one collector quadrant backs up
    "belt_sensor_offline": (6, 6, 30, False),  # belt fill sensors report nothing (NULL)
    "upstream_sensor_offline": (4, 6, 24, False),  # upstream flow sensor reports nothing
    "camera_glare": (5, 6, 24, False),  # site lighting: cameras misread at many stations
    "packaging_defect": (3, 24, 96, False),  # bad item packaging: pick errors site-wide
    "robot_fault": (5, 3, 24, True),  # robot in fault state: station idles
    "robot_flapping": (0.6, 36, 72, True),  # a robot faulting again and again
    "robot_standby": (1.5, 12, 48, True),  # planned standby
    "suction_wear": (1.6, 120, 360, True),  # worn suction cup: vacuum drops, errors rise
    "camera_dirty": (2.5, 24, 96, True),  # dirty lens: read failures, pick errors
    "label_stockout": (2.0, 4, 30, True),  # label roll empty and not replaced
    "printer_fault": (1.6, 4, 18, True),  # label printer down
    "telemetry_gap": (0.8, 6, 36, True),  # robot exporter down: no samples at all
    "site_stop": (1.2, 14, 30, False),  # planned stop (safety drill): every robot on standby
    "exporter_outage": (2.5, 12, 30, False),  # the site's robotics exporter down: no samples
}


# A busy dock: scales every rate above.
RATE = 1.6


@dataclass(frozen=True)
class Fault:
    """One fault episode over ticks ``[start, end)``."""

    kind: str
    site: str
    station: str | None
    start: int
    end: int
    quadrant: str | None = None
    severity: float = 1.0


def schedule_faults(rng: np.random.Generator, spec: SiteSpec, n_ticks: int) -> list[Fault]:
    """Every fault episode of one site, sorted by start."""
    days = n_ticks / TICKS_PER_DAY
    out: list[Fault] = []
    for kind, (per_28d, lo, hi, per_station) in FAULT_KINDS.items():
        targets: list[str | None] = station_ids(spec) if per_station else [None]
        for station in targets:
            count = rng.poisson(per_28d * RATE * days / 28)
            for _ in range(count):
                dur = int(rng.integers(lo, hi + 1))
                if n_ticks - dur - 1 <= TICKS_PER_DAY // 8:
                    continue  # longer than the simulated span
                start = int(rng.integers(TICKS_PER_DAY // 8, n_ticks - dur - 1))
                if kind == "robot_flapping":
                    out += _flaps(rng, spec.name, station, start, dur)
                    continue
                quadrant = None
                if kind in ("quadrant_backup",):
                    quadrant = QUADRANTS[int(rng.integers(0, 4))]
                if kind == "belt_sensor_offline":
                    # Half the outages take one quadrant's sensor, half the whole belt.
                    quadrant = QUADRANTS[int(rng.integers(0, 4))] if rng.random() < 0.5 else None
                out.append(
                    Fault(
                        kind,
                        spec.name,
                        station,
                        start,
                        start + dur,
                        quadrant,
                        float(rng.uniform(0.6, 1.0)),
                    )
                )
    out.sort(key=lambda f: (f.start, f.kind, f.station or ""))
    return out


def _flaps(
    rng: np.random.Generator, site: str, station: str | None, start: int, dur: int
) -> list[Fault]:
    """3-5 short robot faults spread over one window."""
    k = int(rng.integers(3, 6))
    starts = np.sort(rng.choice(np.arange(start, start + dur - 4, 5), size=k, replace=False))
    return [
        Fault("robot_fault", site, station, int(s), int(s) + int(rng.integers(1, 4)))
        for s in starts
    ]
