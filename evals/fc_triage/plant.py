"""The simulated outbound dock's fixed layout: sites, stations, quadrants and the time grid.

Everything here is a constant or a pure helper shared by the simulator, the stores, the
labeler and the scenario builder, so they agree on names and on how time is indexed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

TICK_S = 300  # one sample every 5 minutes
TICKS_PER_DAY = 86400 // TICK_S
# Monday 2025-03-03 00:00 UTC; sample k is stamped T0 + k*TICK_S and covers the 5 minutes
# ending at that stamp.
T0 = int(datetime(2025, 3, 3, tzinfo=UTC).timestamp())

QUADRANTS = ("NW", "NE", "SW", "SE")
AREAS = ("pack_out", "induct", "float")
SHIFT_STARTS_H = (6, 18)  # day shift 06:00-18:00 UTC, night shift 18:00-06:00 UTC


@dataclass(frozen=True)
class SiteSpec:
    """One fulfillment center: its name, station count and baseline robot error rate."""

    name: str
    stations: int
    base_pick_error_pct: float
    pack_out_day: int
    pack_out_night: int


SITES: tuple[SiteSpec, ...] = (
    SiteSpec("BFI4", 8, 1.4, 12, 8),
    SiteSpec("DFW7", 8, 2.4, 14, 9),
    SiteSpec("ONT8", 8, 3.4, 12, 8),
)


def station_ids(spec: SiteSpec) -> list[str]:
    return [f"ST{i + 1:02d}" for i in range(spec.stations)]


def robot_id(site: str, station: str) -> str:
    return f"{site}-R{station[2:]}"


def printer_id(site: str, station: str) -> str:
    return f"{site}-P{station[2:]}"


def quadrant_of(station_index: int, n_stations: int) -> str:
    """Stations feed the collector belt in four equal blocks: NW, NE, SW, SE."""
    return QUADRANTS[min(3, station_index * 4 // n_stations)]


def tick_times(n_ticks: int) -> np.ndarray:
    """Epoch seconds of every sample."""
    return T0 + TICK_S * np.arange(n_ticks, dtype=np.int64)


def iso(ts: int | float) -> str:
    """ISO 8601 UTC with a ``Z``: the form alarms and cases carry."""
    return datetime.fromtimestamp(int(ts), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def sql_time(ts: int | float) -> str:
    """``YYYY-MM-DD HH:MM:SS`` UTC: the form the ops store keeps."""
    return datetime.fromtimestamp(int(ts), UTC).strftime("%Y-%m-%d %H:%M:%S")


def parse_ts(text: str) -> int:
    """Epoch seconds of an ISO 8601 timestamp (``Z`` or offset; naive means UTC)."""
    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp())
