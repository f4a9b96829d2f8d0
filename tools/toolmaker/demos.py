"""Demonstrations from the library: the verified specs of the most similar other nodes.

A growing library helps make the next tool: for a node, the retriever ranks every other node
whose active tool is a spec by the overlap of their words (node text, data hints, parameter
names; TF-IDF cosine) and returns the top ``k``. Never the node's own tool, never one that
takes the same measurement (a metric or column the node's own data hints name: the copies a
library accumulates), never a labeled case. ``cold_start_demos`` takes them from another SOP's
library only.

Example:
    >>> demos = library_demos(sop, registry, "obs_label_fail_high", k=3)  # doctest: +SKIP
    >>> [d.node for d in demos]                                             # doctest: +SKIP
    ['obs_camera_fail_high', 'rc_label_defects', 'obs_station_idle']
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sopgraph.graphs.loader import load_sop
from sopgraph.graphs.model import Sop
from sopgraph.tools import similar
from sopgraph.tools.registry import Registry
from sopgraph.tools.similar import Entry, nearest

SPEC_KEYS = ("value", "measures", "scale", "op", "threshold", "missing", "zero_division", "lookups")
# fields the grammar always writes (a demonstration shows them even at their defaults)
SHOWN_DEFAULTS = {"scale": 1, "missing": "no_data"}
MEASURE_KEYS = ("server", "metric", "table", "column", "columns", "match", "where", "time_column",
                "minutes", "reduce", "open_at", "across", "age_unit", "default")  # fmt: skip
FIELD_KEYS = ("server", "tool", "args", "field", "equals", "one_of", "within_days", "of",
              "default")  # fmt: skip


@dataclass(frozen=True)
class Demo(Entry):
    def render(self) -> str:
        return (
            f"check: {self.text}\ndata: {', '.join(self.data) or '-'}\n"
            f"spec: {json.dumps(canonical(self.spec), separators=(', ', ': '))}"
        )


def canonical(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec as the grammar writes it (the model copies what it sees): keys in the
    grammar's order, the measurements renamed a, b, c in order and the formula with them."""
    names = {old: "abcdefgh"[i] for i, old in enumerate(spec["measures"])}
    spec = {**SHOWN_DEFAULTS, **spec}
    if len(names) > 1:
        spec.setdefault("zero_division", "no_data")
    out = {k: spec[k] for k in SPEC_KEYS if k in spec}
    if "value" in out:
        out["value"] = re.sub(
            r"[A-Za-z_]\w*", lambda m: names.get(m.group(0), m.group(0)), str(out["value"])
        )
    out["measures"] = {names[name]: _measure(m) for name, m in spec["measures"].items()}
    return out


def _measure(m: dict[str, Any]) -> dict[str, Any]:
    """A measurement with the fields the grammar always writes (null where unset)."""
    if "tool" in m:  # a field of a record: no reduction
        return {k: m[k] for k in FIELD_KEYS if k in m}
    full = {"reduce": "mean", **m}
    if "table" in m:  # column, time_column and minutes are required (nullable) for rows
        full = {"time_column": None, "minutes": None, **full}
        if not m.get("columns"):  # several columns: `columns` and `across` in its place
            full = {"column": None, **full}
    return {k: full[k] for k in MEASURE_KEYS if k in full}


def library_specs(sop: Sop, registry: Registry) -> list[Demo]:
    """Every node of ``sop`` whose active tool is a spec, as a candidate demonstration."""
    return similar.library_specs(sop, registry, Demo)


def library_demos(sop_dir: Path, node_id: str, k: int = 3) -> list[Demo]:
    sop = load_sop(sop_dir)
    node = sop.nodes[node_id]
    pool = library_specs(sop, Registry(Path(sop_dir) / "tools"))
    return nearest(pool, node.text, list(node.data), k, node_id)


def render(demos: list[Demo]) -> str:
    if not demos:
        return "none"
    return "\n\n".join(f"demonstration {i + 1}:\n{d.render()}" for i, d in enumerate(demos))
