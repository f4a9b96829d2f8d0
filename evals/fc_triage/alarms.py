"""Alarms the dock's alarm system raised over the simulated weeks.

Most follow an injected fault by a few minutes (the alarm the fault deserves, and the ones
it cascades into); the rest are nuisance alarms raised on noise, some during sensor
outages. Timestamps fall at odd seconds, a share exactly on a 5-minute boundary.
"""

from __future__ import annotations

import numpy as np

from sopgraph.evals.fc_triage.plant import T0, TICK_S
from sopgraph.evals.fc_triage.world import World

ALARM_TYPES = (
    "station_idle",
    "pick_error_rate",
    "camera_read_failure",
    "label_print_failure",
    "belt_backup",
    "upstream_starvation",
    "sorter_jam",
    "throughput_drop",
)
STATION_ALARMS = {"station_idle", "pick_error_rate", "camera_read_failure", "label_print_failure"}
SEVERITY = {
    "station_idle": "minor",
    "pick_error_rate": "minor",
    "camera_read_failure": "minor",
    "label_print_failure": "minor",
    "belt_backup": "major",
    "upstream_starvation": "major",
    "sorter_jam": "major",
    "throughput_drop": "critical",
}
# fault kind -> alarms it raises: (type, station rule, lag range in ticks)
CASCADE: dict[str, list[tuple[str, str, tuple[int, int]]]] = {
    "upstream_blockage": [
        ("upstream_starvation", "site", (1, 5)),
        ("station_idle", "any", (1, 6)),
        ("station_idle", "any", (2, 8)),
        ("throughput_drop", "site", (8, 14)),
    ],
    "upstream_low_volume": [("upstream_starvation", "site", (2, 12))],
    "sorter_jam": [("sorter_jam", "site", (2, 6)), ("belt_backup", "site", (3, 8))],
    "staffing_shortfall": [("belt_backup", "site", (6, 20)), ("station_idle", "any", (6, 20))],
    "quadrant_backup": [("belt_backup", "site", (2, 6)), ("station_idle", "quadrant", (2, 8))],
    "belt_sensor_offline": [("belt_backup", "site", (1, 5))],
    "upstream_sensor_offline": [("upstream_starvation", "site", (1, 5))],
    "camera_glare": [
        ("camera_read_failure", "any", (1, 5)),
        ("pick_error_rate", "any", (2, 6)),
    ],
    "packaging_defect": [("pick_error_rate", "any", (2, 10)), ("pick_error_rate", "any", (6, 20))],
    "robot_fault": [("station_idle", "self", (1, 4))],
    "robot_standby": [("station_idle", "self", (1, 6))],
    "suction_wear": [
        ("pick_error_rate", "self", (40, 80)),
        ("pick_error_rate", "self", (90, 200)),
        ("pick_error_rate", "self", (150, 300)),
    ],
    "camera_dirty": [
        ("camera_read_failure", "self", (4, 20)),
        ("pick_error_rate", "self", (10, 40)),
    ],
    "label_stockout": [("label_print_failure", "self", (1, 4))],
    "printer_fault": [("label_print_failure", "self", (1, 4))],
    "telemetry_gap": [("station_idle", "self", (1, 5)), ("pick_error_rate", "self", (2, 6))],
    "site_stop": [("station_idle", "any", (1, 4)), ("throughput_drop", "site", (6, 14))],
    "exporter_outage": [("station_idle", "any", (1, 4)), ("pick_error_rate", "any", (1, 5))],
}


def _ts(rng: np.random.Generator, tick: int) -> int:
    # One alarm in eight lands exactly on a sample boundary, where window edges matter.
    offset = 0 if rng.random() < 0.125 else int(rng.integers(1, TICK_S))
    return T0 + tick * TICK_S + offset


def raise_alarms(
    world: World, rng: np.random.Generator, nuisance_share: float = 0.3, min_total: int = 0
) -> list[dict]:
    """Every alarm, sorted by time, with ``alarm_id``, ``type``, ``site``, ``station``, ``ts``.

    Nuisance alarms make up ``nuisance_share`` of the total, or more to reach ``min_total``.
    """
    out: list[dict] = []
    n = world.n_ticks
    for site, fr in world.sites.items():
        for f in fr.faults:
            for kind, rule, (lo, hi) in CASCADE.get(f.kind, []):
                tick = f.start + int(rng.integers(lo, hi + 1))
                if tick >= n or tick < 24:
                    continue
                station = None
                if rule == "self":
                    station = f.station
                elif rule == "any":
                    station = fr.stations[int(rng.integers(len(fr.stations)))]
                elif rule == "quadrant":
                    feeding = [s for s in fr.stations if fr.quadrant[s] == f.quadrant]
                    station = feeding[int(rng.integers(len(feeding)))]
                out.append({"type": kind, "site": site, "station": station, "ts": _ts(rng, tick)})
    n_nuisance = int(len(out) * nuisance_share / (1 - nuisance_share))
    n_nuisance = max(n_nuisance, min_total - len(out))
    sites = list(world.sites)
    for _ in range(n_nuisance):
        site = sites[int(rng.integers(len(sites)))]
        kind = ALARM_TYPES[int(rng.integers(len(ALARM_TYPES)))]
        stations = world.sites[site].stations
        station = stations[int(rng.integers(len(stations)))] if kind in STATION_ALARMS else None
        tick = int(rng.integers(24, n))
        out.append({"type": kind, "site": site, "station": station, "ts": _ts(rng, tick)})
    out.sort(key=lambda a: (a["ts"], a["site"], a["type"], a["station"] or ""))
    for i, a in enumerate(out):
        a["alarm_id"] = f"ALM-{i + 1:06d}"
        a["severity"] = SEVERITY[a["type"]]
    return out
