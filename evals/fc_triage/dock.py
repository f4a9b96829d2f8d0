"""The simulated dock the measuring commands run on: the triage SOP, its world, its scenarios.

The evals layer's benchmarks use it directly; the shell reads it through
``sopgraph.triage_world``.
"""

from __future__ import annotations

import sys
from typing import Any

from sopgraph.examples import EXAMPLES

TRIAGE_SOP = EXAMPLES / "fc_alarm_triage"


def world() -> Any:
    """The simulated dock's files under $SOPGRAPH_HOME, built on first use."""
    from sopgraph.evals.fc_triage.build import build_world
    from sopgraph.graphs.home import home_dir

    return build_world(home_dir(), progress=sys.stderr.isatty())


def first_scenarios(paths: Any, split: str, n: int | None) -> list:
    """The first ``n`` scenarios of a split (``all``: every split); all of them without ``n``."""
    from sopgraph.evals.fc_triage.dataset import load_scenarios

    found = load_scenarios(paths.scenarios, split=None if split == "all" else split)
    return found[:n] if n else found
