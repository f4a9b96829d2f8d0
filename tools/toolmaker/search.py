"""The host-side search: conventions around a candidate, and the LLM-free baseline.

``conventions`` varies what a small model most often gets subtly wrong while the shape is
right: the window's edge, the missing-data and zero-division outcomes, a fraction against a
percent (``scale``), a strict against a non-strict comparison. ``improve`` walks them greedily
on the training cases and keeps a variant only when it passes more cases. ``enumerate_specs``
is the same search with no model at all: every spec it can build from the node's data hints,
the windows its text names, its parameters and the comparisons, scored on the training cases
(the baseline the tool-maker must beat).
"""

from __future__ import annotations

import copy
import itertools
import json
import re
from typing import Any

from sopgraph.tools.toolmaker.data_catalog import DataCatalog
from sopgraph.tools.toolmaker.execution import Score, SpecRunner
from sopgraph.tools.toolmaker.record import Case

OUTCOMES = ("no_data", "false", "true")
FLIP = {">": ">=", ">=": ">", "<": "<=", "<=": "<"}
_WINDOW = re.compile(r"(\d+)\s*(minutes?|min|hours?|h\b|days?)", re.I)
PARAM = re.compile(r"\{([A-Za-z_]\w*)\}")


def size(spec: dict[str, Any]) -> int:
    """Simpler specs are shorter (a tie-break between equal training scores)."""
    return len(json.dumps(spec, sort_keys=True))


def conventions(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """One-field variants of ``spec`` along the conventions."""
    out = []

    def variant(fn) -> None:
        s = copy.deepcopy(spec)
        fn(s)
        if s != spec:
            out.append(s)

    for outcome in OUTCOMES:
        variant(lambda s, o=outcome: s.__setitem__("missing", o))
        variant(lambda s, o=outcome: s.__setitem__("zero_division", o))
    for scale in (1, 100, 0.01):
        variant(lambda s, x=scale: s.__setitem__("scale", x))
    if spec.get("op") in FLIP:
        variant(lambda s: s.__setitem__("op", FLIP[s["op"]]))
    for name, m in spec.get("measures", {}).items():
        if m.get("table") and m.get("minutes"):
            for edge in ("(]", "[)", "[]"):
                variant(lambda s, n=name, e=edge: s["measures"][n].__setitem__("edge", e))
        for default in (None, 0):

            def set_default(s, n=name, d=default):
                if d is None:
                    s["measures"][n].pop("default", None)
                else:
                    s["measures"][n]["default"] = d

            variant(set_default)
    return out


async def improve(
    runner: SpecRunner, spec: dict[str, Any], score: Score, cases: list[Case], depth: int = 2
) -> tuple[dict[str, Any], Score, list[str]]:
    """Every variant of ``spec`` that changes up to ``depth`` conventions, scored on the cases;
    returns the best (more cases passed, then the shorter spec), its score and the changes.
    The replies are cached by the runner, so a variant costs no new query unless its edge
    moved."""
    frontier = [(spec, [])]
    seen = {json.dumps(spec, sort_keys=True)}
    best, best_score, best_steps = spec, score, []
    for _ in range(depth):
        nxt = []
        for base, steps in frontier:
            for v in conventions(base):
                key = json.dumps(v, sort_keys=True)
                if key in seen:
                    continue
                seen.add(key)
                nxt.append((v, [*steps, _diff(base, v)]))
        for v, steps in nxt:
            s = await runner.score(v, cases)
            if s.problem is None and (s.passed, -size(v)) > (best_score.passed, -size(best)):
                best, best_score, best_steps = v, s, steps
        if best_score.passed == best_score.cases:
            break
        frontier = nxt
    if best is spec:
        return spec, score, []
    return best, best_score, [" + ".join(best_steps) + f" ({score.passed} -> {best_score.passed})"]


def _diff(a: dict[str, Any], b: dict[str, Any]) -> str:
    for k in set(a) | set(b):
        if k == "measures":
            for n in b["measures"]:
                ma, mb = a["measures"].get(n, {}), b["measures"][n]
                for f in set(ma) | set(mb):
                    if ma.get(f) != mb.get(f):
                        return f"measures.{n}.{f}: {ma.get(f)!r} -> {mb.get(f)!r}"
        elif a.get(k) != b.get(k):
            return f"{k}: {a.get(k)!r} -> {b.get(k)!r}"
    return "no change"


def windows(text: str) -> list[int]:
    """The windows a node's text names, in minutes (default 15, 30 and 60)."""
    found = []
    for n, unit in _WINDOW.findall(text):
        u = unit.lower()
        found.append(int(n) * (1440 if u.startswith("d") else 60 if u.startswith("h") else 1))
    if "last hour" in text.lower():
        found.append(60)
    return list(dict.fromkeys(found)) or [15, 30, 60]


def keyed(fields: list[str]) -> list[dict[str, str]]:
    """The scopes a measurement may be matched on, coarsest first: the first of the input's
    fields that key the data, then the first two, and so on (``{"a": "$a"}``, ``{"a": "$a",
    "b": "$b"}``)."""
    return [{f: f"${f}" for f in fields[:n]} for n in range(1, len(fields) + 1)]


def table_keys(cols: list[str], input_fields: list[str]) -> list[str]:
    """The input's fields that are columns of the table (not its time), in the input's order."""
    return [f for f in input_fields if f in cols and f != "timestamp"]


def enumerate_specs(
    text: str, hints: list[str], data: DataCatalog, params: list[str], input_fields: list[str]
) -> list[dict[str, Any]]:
    """Every spec the baseline builds from the node's hints (no model): each hinted metric or
    column over the text's windows and the reductions, each field of a hinted record tool (a
    declared value tested for, or its number), against the text's parameters."""
    named = [p for p in PARAM.findall(text) if p in params]
    thresholds: list[Any] = named or [0]
    measures: list[dict[str, Any]] = []
    for hint in hints:
        server, _, item = hint.partition(".")
        for w in windows(text):
            if item in data.metrics.get(server, []):
                matches = keyed(data.keyed_labels(server, input_fields)) or [{}]
                for match, reduce in itertools.product(
                    matches, ("mean", "sum", "max", "min", "last", "count")
                ):
                    measures.append({"server": server, "metric": item, "match": match,
                                     "minutes": w, "reduce": reduce})  # fmt: skip
            for table, cols in data.tables.get(server, {}).items():
                if item not in cols and item != table:
                    continue
                times = data.time_columns(table)
                if not times:
                    continue
                # the first input field the table has: the coarsest scope (more are the grammar's)
                where = (keyed(table_keys(cols, input_fields)) or [{}])[0]
                column = item if item in cols else None
                reduces = (
                    ("mean", "sum", "max", "min", "last", "increase", "count")
                    if column
                    else ("count",)
                )
                for reduce in reduces:
                    measures.append({"server": server, "table": table, "column": column,
                                     "where": where, "time_column": times[0], "minutes": w,
                                     "reduce": reduce})  # fmt: skip
        for tool, fields in data.record_tools(server, input_fields).items():
            if item != tool:
                continue
            args = {a: f"${a}" for a in data.arguments.get(f"{server}.{tool}", [])}
            for name, declared in fields.items():
                base = {"server": server, "tool": tool, "args": args, "field": name}
                if declared.get("enum"):  # 1 when the field holds the value: > 0 or <= 0
                    measures += [{**base, "equals": v} for v in declared["enum"]]
                elif declared.get("type") in ("number", "integer"):
                    measures.append(base)
    specs = []
    for m in measures:
        m = {k: v for k, v in m.items() if v is not None}
        for op, threshold, scale in itertools.product(("<", "<=", ">", ">="), thresholds, (1, 100)):
            specs.append({"measures": {"x": m}, "value": "x", "scale": scale, "op": op,
                          "threshold": threshold, "missing": "no_data"})  # fmt: skip
    if len(hints) == 2:  # a ratio of the two hinted series, in percent
        a, b = (h.partition(".")[2] for h in hints)
        server = hints[0].partition(".")[0]
        if a in data.metrics.get(server, []) and b in data.metrics.get(server, []):
            match = (keyed(data.keyed_labels(server, input_fields)) or [{}])[-1]  # the finest
            for w, op, threshold in itertools.product(windows(text), (">", ">="), thresholds):
                specs.append({
                    "measures": {"a": {"server": server, "metric": a, "match": match, "minutes": w, "reduce": "sum"},
                                 "b": {"server": server, "metric": b, "match": match, "minutes": w, "reduce": "sum"}},
                    "value": "a / b", "scale": 100, "op": op, "threshold": threshold,
                    "missing": "no_data",
                })  # fmt: skip
    return specs


async def llm_free(
    runner: SpecRunner,
    text: str,
    hints: list[str],
    data: DataCatalog,
    params: list[str],
    input_fields: list[str],
    train: list[Case],
) -> tuple[dict[str, Any] | None, Score | None, int]:
    """The baseline: the best enumerated spec on the training cases, then its conventions."""
    specs = enumerate_specs(text, hints, data, params, input_fields)
    best: tuple[dict[str, Any], Score] | None = None
    for spec in specs:
        s = await runner.score(spec, train)
        if s.problem:
            continue
        if best is None or (s.passed, -size(spec)) > (best[1].passed, -size(best[0])):
            best = (spec, s)
    if best is None:
        return None, None, len(specs)
    spec, score = best
    if score.passed < score.cases:
        spec, score, _ = await improve(runner, spec, score, train)
    return spec, score, len(specs)
