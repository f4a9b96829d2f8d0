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

A node whose check is another node's with other arguments binds that node's pinned version
instead of copying it (``tools/rc_sorter_jam/v5.py``):

    from sopgraph.tools.spec import spec_of, tool

    SPEC = spec_of("obs_sorter_jams", 4).bind(threshold="sorter_jam_min")
    run = tool(SPEC)
"""

from __future__ import annotations

import sys
from pathlib import Path

from sopgraph.tools.spec.model import (
    Check,
    FieldMeasure,
    Keep,
    Lookup,
    Measure,
    RowsMeasure,
    SeriesMeasure,
    SpecError,
)
from sopgraph.tools.spec.run import tool, trace

__all__ = ["Check", "FieldMeasure", "Keep", "Lookup", "Measure", "RowsMeasure", "SeriesMeasure",
           "SpecError", "spec_of", "tool", "trace"]  # fmt: skip


def spec_of(node_id: str, version: int) -> Check:
    """The spec of version ``version`` of ``node_id``'s tool, in the library importing the tool
    file that calls this (else the folder above the file's own), loaded as the registry loads any
    version: its file checked against the manifest's sha256. Pinned, so a new version of the
    shared check changes no tool that binds an older one.

    Raises:
        SpecError: the version is not registered, or is not a spec.
        ToolIntegrityError: its file differs from what was registered.
    """
    from sopgraph.tools.contract import LIBRARY
    from sopgraph.tools.registry import Registry, RegistryError  # the library, when asked

    lib = LIBRARY.get()  # the library importing the file (``tools add`` checks it from anywhere)
    if lib is None:
        caller = sys._getframe(1).f_globals.get("__file__")
        if not caller:
            raise SpecError(f"spec_of({node_id!r}, {version}): call it from a tool file")
        lib = Path(caller).resolve().parent.parent
    registry = Registry(lib)
    try:
        info = registry.entry(node_id).version(version)
    except RegistryError as exc:
        raise SpecError(f"spec_of({node_id!r}, {version}): {exc}") from None
    if info is None:
        raise SpecError(
            f"spec_of({node_id!r}, {version}): {node_id} has no version {version} in {lib}"
        )
    check = getattr(registry.load(node_id, info).fn, "spec", None)
    if check is None:
        raise SpecError(f"spec_of({node_id!r}, {version}): that version is Python, not a spec")
    return check
