"""A decision tool as data: named measurements, a value, a comparison, missing-data rules.

The ordinary way to write a decision tool, for people and the tool-maker alike. A tool file
holds a spec and makes ``run`` from it; the spec compiles, through the kit, into parameterised
queries, and the kit builds the ``Verdict`` with ``observed`` in the SOP text's unit. Free
Python stays for what a spec cannot say.

Example (a tool file, ``tools/obs_station_idle/v3.py``):

    from sopgraph.tools.spec import Check, Measure, tool

    SPEC = Check(
        measures={"idle": Measure(server="robotics", metric="station_idle_pct", minutes=15,
                                  match={"site": "$site", "station": "$station"})},
        value="idle", op=">", threshold="idle_pct_threshold",
    )
    run = tool(SPEC)
"""

from __future__ import annotations

from typing import Any

from sopgraph.tools.spec.model import Check, Keep, Lookup, Measure, SpecError
from sopgraph.tools.spec.run import evaluate_check, trace

__all__ = ["Check", "Keep", "Lookup", "Measure", "SpecError", "tool", "trace"]


def tool(spec: Check | dict[str, Any]):
    """``async def run(input, ctx) -> Verdict`` for ``spec`` (checked once, here)."""
    check = Check.from_dict(spec) if isinstance(spec, dict) else spec
    check.validate()

    async def run(input, ctx):
        return await evaluate_check(check, input, ctx)

    run.spec = check  # type: ignore[attr-defined]
    return run
