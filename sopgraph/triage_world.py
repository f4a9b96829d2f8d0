"""The simulated dock the measuring commands run on: the triage SOP, its world, its scenarios
(defined in the evals layer, ``sopgraph.evals.fc_triage.dock``)."""

from sopgraph.evals.fc_triage.dock import TRIAGE_SOP, first_scenarios, world

__all__ = ["TRIAGE_SOP", "first_scenarios", "world"]
