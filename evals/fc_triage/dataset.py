"""Read a built world's ground truth: alarm scenarios and per-node labeled cases.

Example:
    >>> paths = build_world(Path(".sopgraph"))                    # doctest: +SKIP
    >>> held_out = load_scenarios(paths.scenarios, split="eval")  # doctest: +SKIP
    >>> cases = load_cases(paths.cases, "obs_station_idle")       # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

Split = Literal["train", "eval"]


class Scenario(BaseModel):
    """One historical alarm and what a faithful triage of it finds."""

    alarm_id: str
    type: str
    site: str
    station: str | None
    timestamp: str
    observations: list[str]  # observation nodes that hold
    root_causes: list[str]  # root-cause nodes that hold
    constraints: list[str]  # constraint nodes that hold
    actions: list[str]  # action nodes reached (every action approved)
    verdicts: dict[str, str]  # every decision node evaluated -> true | false | no_data
    path: list[str]  # nodes in breadth-first order
    split: Split

    @property
    def input(self) -> dict[str, Any]:
        """The run input for ``run_sop``."""
        return {
            "type": self.type,
            "site": self.site,
            "station": self.station,
            "timestamp": self.timestamp,
            "alarm_id": self.alarm_id,
        }


class LabeledCase(BaseModel):
    """One (input, verdict) pair for a decision node."""

    node: str
    site: str
    timestamp: str
    input: dict[str, Any]
    expected: Literal["true", "false", "no_data"]
    observed: Any = None
    threshold: Any = None
    split: Split
    # Why the case was sampled: "flip:<convention>" (that convention's wrong variant labels
    # it otherwise), "no_data", "near_threshold", "aligned", "zero_denominator".
    edges: list[str] = Field(default_factory=list)
    parents: dict[str, str] = Field(default_factory=dict)  # parent node -> its true verdict

    @property
    def run_input(self) -> dict[str, Any]:
        """The input a tool gets for this case (``run(input, ctx)``): the case's input with its
        site and time, as a run's validated input carries them."""
        return {**self.input, "site": self.site, "timestamp": self.timestamp}


def _lines(path: Path) -> list[str]:
    try:
        return [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{path}: no such file; build the world with `python -m sopgraph.evals.fc_triage.build`"
        ) from None


def load_scenarios(path: Path, split: Split | None = None) -> list[Scenario]:
    """Scenarios from ``scenarios.jsonl``, optionally one split only."""
    rows = [Scenario.model_validate_json(ln) for ln in _lines(Path(path))]
    return [r for r in rows if split is None or r.split == split]


def load_cases(cases_dir: Path, node_id: str, split: Split | None = None) -> list[LabeledCase]:
    """A node's labeled cases from ``cases/<node_id>.jsonl``."""
    rows = [
        LabeledCase.model_validate_json(ln) for ln in _lines(Path(cases_dir) / f"{node_id}.jsonl")
    ]
    return [r for r in rows if split is None or r.split == split]
