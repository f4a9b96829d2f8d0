"""The offline labeler: each decision node's ground truth, as the subject-matter expert means it.

``label(world, node_id, query, params)`` reads the simulated frames (exactly the values the
stores hold) and returns the node's ``Truth``. The per-node logic lives in ``truth_*.py``,
over the vocabulary of ``truth.py`` and the lookups of ``frames.py``; the conventions it
applies, which the SOP text leaves unstated, are in ``conventions.md``.
"""

from __future__ import annotations

from typing import Any

# Imported for their @truth registrations: every decision node's function is in REGISTRY.
from sopgraph.evals.fc_triage import truth_conveyance, truth_ops, truth_robotics  # noqa: F401
from sopgraph.evals.fc_triage.conventions import EXPERT, Conventions
from sopgraph.evals.fc_triage.frames import Frames
from sopgraph.evals.fc_triage.truth import REGISTRY, STATION_NODES, Query, Truth
from sopgraph.evals.fc_triage.world import World


class Labeler:
    """Ground truth over one world; frames are indexed once per site."""

    def __init__(self, world: World, cv: Conventions = EXPERT):
        self.world = world
        self.cv = cv
        self.frames = {site: Frames(fr, cv) for site, fr in world.sites.items()}

    def with_conventions(self, cv: Conventions) -> Labeler:
        """A labeler over the same indexed frames that applies ``cv`` instead."""
        other = object.__new__(Labeler)
        other.world, other.cv = self.world, cv
        other.frames = {s: f.with_conventions(cv) for s, f in self.frames.items()}
        return other

    def label(self, node_id: str, q: Query, params: dict[str, Any]) -> Truth:
        fn = REGISTRY[node_id]
        if node_id in STATION_NODES and q.station is None:
            raise ValueError(f"{node_id} is asked about a station; the query names none")
        return fn(self.frames[q.site], q, params)
