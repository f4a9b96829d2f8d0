"""Upstream drift injected into the MCP servers at known instants, for the drift timeline.

``SOPGRAPH_DRIFT`` names a JSON list of drifts; a server applies those aimed at it to every
query whose reference time (the instant asked about) is at or after the drift's onset, as a
production endpoint that changed at that instant would. The three kinds are the ones the
tool-making paper met in production:

- ``type``: ops ``equipment_states.state`` served as a number code instead of its name.
- ``cumulative``: robotics ``pick_errors`` served as a running total since 06:00 UTC
  instead of the errors of the interval.
- ``fraction``: robotics ``station_idle_pct`` served as a 0-1 fraction instead of 0-100.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

ENV = "SOPGRAPH_DRIFT"
STATE_CODES = {"running": 0, "fault": 1, "standby": 2, "maintenance": 3}
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}")


class Drift(BaseModel):
    """One injected drift: what changes, where, and from which instant (epoch seconds)."""

    kind: Literal["type", "cumulative", "fraction"]
    server: Literal["ops", "robotics"]
    field: str
    onset: float


DEFAULTS: dict[str, tuple[str, str]] = {
    "type": ("ops", "state"),
    "cumulative": ("robotics", "pick_errors"),
    "fraction": ("robotics", "station_idle_pct"),
}


def load(server: str) -> list[Drift]:
    """The drifts aimed at ``server`` from ``$SOPGRAPH_DRIFT`` (none when unset)."""
    path = os.environ.get(ENV)
    if not path:
        return []
    rows = json.loads(Path(path).read_text())
    return [d for d in (Drift.model_validate(r) for r in rows) if d.server == server]


def epoch(text: str) -> float:
    t = dt.datetime.fromisoformat(text.replace("Z", "+00:00").replace(" ", "T", 1))
    return (t if t.tzinfo else t.replace(tzinfo=dt.UTC)).timestamp()


def sql_reference_time(sql: str, params: list | None) -> float | None:
    """The latest instant a SQL query names (in its text or parameters): what it asks about."""
    found = _TIME.findall(sql) + [p for p in params or [] if isinstance(p, str) and _TIME.match(p)]
    return max((epoch(s[:19]) for s in found), default=None)


def active(drifts: list[Drift], at: float | None) -> tuple[Drift, ...]:
    """The drifts in force for a query about instant ``at``."""
    if at is None:
        return ()
    return tuple(d for d in drifts if at >= d.onset)
