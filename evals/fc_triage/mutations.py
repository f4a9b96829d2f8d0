"""The convention mutation test: how many labeled cases each wrong convention would flip.

For every convention of ``conventions.py`` and every node it governs, the held-out cases are
relabeled with that one convention replaced by its wrong variant; a case flips when the
verdict changes. A node with at least ``MIN_FLIPS`` flips fails any tool that gets the
convention wrong. The world is re-simulated from its manifest (same seed, same data).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from sopgraph.evals.fc_triage.conventions import EXPERT, MUTATIONS
from sopgraph.evals.fc_triage.dataset import load_cases
from sopgraph.evals.fc_triage.labeler import Labeler
from sopgraph.evals.fc_triage.plant import parse_ts
from sopgraph.evals.fc_triage.simulator import simulate
from sopgraph.evals.fc_triage.truth import STATION_NODES, Query
from sopgraph.graphs.loader import load_sop
from sopgraph.tools.params import ParamStore

MIN_FLIPS = 3


class FlipRow(BaseModel):
    convention: str
    section: str
    wrong: str
    node: str
    cases: int
    flips: int

    @property
    def ok(self) -> bool:
        return self.flips >= MIN_FLIPS


def mutation_table(world_root: Path, sop_dir: Path, split: str | None = "eval") -> list[FlipRow]:
    """One row per (convention, governed node): held-out cases whose label the variant flips.

    Raises ValueError when a stored label is not what the expert labeler gives today (the
    world was built by other code: rebuild it).
    """
    meta = json.loads((world_root / "world.json").read_text())
    world = simulate(meta["seed"], meta["days"], meta["sites"])
    sop = load_sop(sop_dir)
    store = ParamStore(sop, sop_dir)
    params = {s: store.for_key(s) for s in world.sites}
    expert = Labeler(world, EXPERT)
    rows: list[FlipRow] = []
    cached: dict[str, list[tuple[Query, str]]] = {}
    for name, m in MUTATIONS.items():
        wrong = expert.with_conventions(EXPERT.without(name))
        for node in m.nodes:
            if node not in cached:
                cases = load_cases(world_root / "cases", node, split)  # type: ignore[arg-type]
                qs = []
                for c in cases:
                    station = c.input.get("station") if node in STATION_NODES else None
                    q = Query(c.site, parse_ts(c.timestamp), station)
                    if expert.label(node, q, params[c.site]).value != c.expected:
                        raise ValueError(
                            f"{node} {c.site} {c.timestamp}: stored label {c.expected} is not the "
                            "labeler's; rebuild the world (build --force)"
                        )
                    qs.append((q, c.expected))
                cached[node] = qs
            flips = sum(
                wrong.label(node, q, params[q.site]).value != want for q, want in cached[node]
            )
            rows.append(
                FlipRow(convention=name, section=m.section, wrong=m.wrong, node=node,
                        cases=len(cached[node]), flips=flips)
            )  # fmt: skip
    return rows


def table_json(rows: list[FlipRow], split: str | None) -> dict[str, Any]:
    return {
        "split": split or "all",
        "min_flips": MIN_FLIPS,
        "pairs": len(rows),
        "pairs_ok": sum(r.ok for r in rows),
        "rows": [r.model_dump() | {"ok": r.ok} for r in rows],
    }
