"""The vocabulary of ground truth: what a node is asked (``Query``), what it answers (``Truth``)
and the registry the ``truth_*.py`` modules fill with one function per decision node.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from sopgraph.evals.fc_triage.frames import Frames


@dataclass(frozen=True)
class Query:
    """What a node is asked about: a site, an instant (epoch seconds) and maybe a station."""

    site: str
    ts: int
    station: str | None = None


class Truth(NamedTuple):
    """A ground-truth verdict; ``margin`` is |statistic - threshold| when one was compared."""

    value: str  # "true" | "false" | "no_data"
    observed: Any = None
    threshold: Any = None
    margin: float | None = None


TruthFn = Callable[[Frames, Query, dict[str, Any]], Truth]
REGISTRY: dict[str, TruthFn] = {}
# Nodes asked about one station (the alarm's); the others are site-wide.
STATION_NODES: set[str] = set()


def truth(node_id: str, *, station: bool = False) -> Callable[[TruthFn], TruthFn]:
    """Register a node's ground-truth function."""

    def deco(fn: TruthFn) -> TruthFn:
        REGISTRY[node_id] = fn
        if station:
            STATION_NODES.add(node_id)
        return fn

    return deco


def compare(stat: float, op: str, thr: float, observed: Any = None) -> Truth:
    """``stat op thr`` as a Truth carrying the margin (for tie screening)."""
    ok = {">": stat > thr, ">=": stat >= thr, "<": stat < thr, "<=": stat <= thr}[op]
    obs = round(float(stat), 6) if observed is None else observed
    # Integer counts compare exactly; only float statistics can sit on a rounding tie.
    exact = isinstance(stat, int | np.integer) and isinstance(thr, int | np.integer)
    margin = None if exact else abs(float(stat) - float(thr))
    return Truth("true" if ok else "false", obs, thr, margin)
