"""The library's verified specs nearest to a node: what a growing library offers the next node.

Every node of an SOP whose active tool is a spec is a candidate; a node's nearest are ranked
by the overlap of their words (node text, data hints; TF-IDF cosine). Never the node's own
tool. The tool-maker, whose output is judged against labeled cases, never sees one that takes
the same measurement either (a metric or column the node's own data hints name: the copies a
library accumulates) and shows the rest as spec demonstrations (``tools/toolmaker/demos.py``);
the CodeAct sub-agent, which decides a node at run time with what the library holds, may see
them (``copies=True``), as the queries they make (``nodes/codeact_demos.py``).

Example:
    >>> pool = library_specs(sop, registry)                                  # doctest: +SKIP
    >>> [e.node for e in nearest(pool, node.text, node.data, 2, node.id)]    # doctest: +SKIP
    ['obs_camera_fail_high', 'rc_label_defects']
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, TypeVar

from sopgraph.graphs.model import Sop
from sopgraph.tools.registry import Registry, RegistryError

WORD = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class Entry:
    """One node of the library whose active tool is a spec (``spec`` as its dict)."""

    node: str
    text: str
    data: list[str]
    spec: dict[str, Any]
    score: float = 0.0


E = TypeVar("E", bound=Entry)


def words(text: str) -> list[str]:
    return [w for w in WORD.findall(text.lower().replace("_", " ")) if len(w) > 2]


def _vector(terms: list[str], idf: dict[str, float]) -> dict[str, float]:
    tf = Counter(terms)
    return {w: c * idf.get(w, 1.0) for w, c in tf.items()}


def _cos(a: dict[str, float], b: dict[str, float]) -> float:
    dot = sum(v * b.get(w, 0.0) for w, v in a.items())
    na = math.sqrt(sum(v * v for v in a.values()))
    nb = math.sqrt(sum(v * v for v in b.values()))
    return dot / (na * nb) if na and nb else 0.0


def reads(spec: dict[str, Any]) -> set[str]:
    """The metric and column names a spec's measurements read."""
    out = set()
    for m in spec.get("measures", {}).values():
        for key in ("metric", "column"):
            if m.get(key):
                out.add(str(m[key]))
    return out


def library_specs(sop: Sop, registry: Registry, kind: type[E] = Entry) -> list[E]:  # type: ignore[assignment]
    """Every node of ``sop`` whose active tool is a spec, as a ``kind`` (an ``Entry``)."""
    out = []
    for node in sop.decision_nodes:
        try:
            fn = registry.resolve(node.tool_name).fn
        except RegistryError:
            continue
        check = getattr(fn, "spec", None)
        if check is None:
            continue
        out.append(kind(node.id, " ".join(node.text.split()), list(node.data), check.to_dict()))
    return out


def nearest(
    pool: list[E], text: str, data: list[str], k: int, exclude_node: str, copies: bool = False
) -> list[E]:
    """The ``k`` entries most similar to (text, data), leaving out the node and (unless
    ``copies``) the entries that read a metric or column its data hints name."""
    hinted = {d.split(".", 1)[-1] for d in data}
    allowed = [
        d for d in pool if d.node != exclude_node and (copies or not (reads(d.spec) & hinted))
    ]
    docs = [words(d.text + " " + " ".join(d.data)) for d in allowed]
    df = Counter(w for doc in docs for w in set(doc))
    n = len(docs) + 1
    idf = {w: math.log(n / (1 + c)) + 1 for w, c in df.items()}
    query = _vector(words(text + " " + " ".join(data)), idf)
    scored = [
        dataclasses.replace(d, score=round(_cos(query, _vector(doc, idf)), 4))
        for d, doc in zip(allowed, docs, strict=True)
    ]
    return sorted(scored, key=lambda d: (-d.score, d.node))[:k]
