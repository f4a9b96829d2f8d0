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
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sopgraph.graphs.loader import load_sop
from sopgraph.graphs.model import Sop
from sopgraph.tools.registry import Registry, RegistryError

WORD = re.compile(r"[a-z]+")
SPEC_KEYS = ("value", "measures", "scale", "op", "threshold", "missing", "zero_division", "lookups")
# fields the grammar always writes (a demonstration shows them even at their defaults)
SHOWN_DEFAULTS = {"scale": 1, "missing": "no_data"}
MEASURE_KEYS = ("server", "metric", "table", "column", "match", "where", "time_column", "minutes",
                "reduce", "open_at", "across", "age_unit", "default")  # fmt: skip


@dataclass(frozen=True)
class Demo:
    node: str
    text: str
    data: list[str]
    spec: dict[str, Any]
    score: float = 0.0

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
    full = {"reduce": "mean", **m}
    if "table" in m:  # column, time_column and minutes are required (nullable) for rows
        full = {"column": None, "time_column": None, "minutes": None, **full}
    return {k: full[k] for k in MEASURE_KEYS if k in full}


def _words(text: str) -> list[str]:
    return [w for w in WORD.findall(text.lower().replace("_", " ")) if len(w) > 2]


def _vector(words: list[str], idf: dict[str, float]) -> dict[str, float]:
    tf = Counter(words)
    return {w: c * idf.get(w, 1.0) for w, c in tf.items()}


def _cos(a: dict[str, float], b: dict[str, float]) -> float:
    dot = sum(v * b.get(w, 0.0) for w, v in a.items())
    na = math.sqrt(sum(v * v for v in a.values()))
    nb = math.sqrt(sum(v * v for v in b.values()))
    return dot / (na * nb) if na and nb else 0.0


def _reads(spec: dict[str, Any]) -> set[str]:
    """The metric and column names a spec's measurements read."""
    out = set()
    for m in spec.get("measures", {}).values():
        for key in ("metric", "column"):
            if m.get(key):
                out.add(str(m[key]))
    return out


def library_specs(sop: Sop, registry: Registry) -> list[Demo]:
    """Every node of ``sop`` whose active tool is a spec, as a candidate demonstration."""
    out = []
    for node in sop.decision_nodes:
        try:
            fn = registry.resolve(node.tool_name).fn
        except RegistryError:
            continue
        check = getattr(fn, "spec", None)
        if check is None:
            continue
        out.append(Demo(node.id, " ".join(node.text.split()), list(node.data), check.to_dict()))
    return out


def nearest(pool: list[Demo], text: str, data: list[str], k: int, exclude_node: str) -> list[Demo]:
    """The ``k`` demos most similar to (text, data), leaving out the node and its copies."""
    hinted = {d.split(".", 1)[-1] for d in data}
    allowed = [d for d in pool if d.node != exclude_node and not (_reads(d.spec) & hinted)]
    docs = [_words(d.text + " " + " ".join(d.data)) for d in allowed]
    df = Counter(w for doc in docs for w in set(doc))
    n = len(docs) + 1
    idf = {w: math.log(n / (1 + c)) + 1 for w, c in df.items()}
    query = _vector(_words(text + " " + " ".join(data)), idf)
    scored = [
        Demo(d.node, d.text, d.data, d.spec, round(_cos(query, _vector(doc, idf)), 4))
        for d, doc in zip(allowed, docs, strict=True)
    ]
    return sorted(scored, key=lambda d: (-d.score, d.node))[:k]


def library_demos(sop_dir: Path, node_id: str, k: int = 3) -> list[Demo]:
    sop = load_sop(sop_dir)
    node = sop.nodes[node_id]
    pool = library_specs(sop, Registry(Path(sop_dir) / "tools"))
    return nearest(pool, node.text, list(node.data), k, node_id)


def render(demos: list[Demo]) -> str:
    if not demos:
        return "none"
    return "\n\n".join(f"demonstration {i + 1}:\n{d.render()}" for i, d in enumerate(demos))
