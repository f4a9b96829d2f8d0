"""Import SOP-agent's pseudocode YAML (Ye et al., 2025) into the native SOP model.

A pseudocode SOP is a tree of steps. Each step is a mapping whose first key is the step's
description (with no value) and whose other keys are its fields::

    - authenticate customer's identity account details:
      condition: "always"
      API: {"name": "authenticate_customer", "description": "Confirm ..."}
      Instructions:
        - if account authentication fails, advise the customer ...:
          condition: {"API": "authenticate_customer", "variable": "authentication_status",
                      "condition_type": "is", "value": "failed"}

A step's ``condition`` (or ``condition_type: always | if``) guards the edge from its parent;
``Instructions`` are its children; ``label`` names it and ``goto: a, b`` adds edges to the
labelled steps, each guarded by the target's own condition. The mapping:

- a step with an ``API`` and children is an ``observation`` whose tool calls the API;
  a step with no children is an ``action`` (keeping its ``api``); a step with no API whose
  children all follow ``always`` is an ``action`` too (the agent acts, then goes on), and one
  whose children need choosing is an ``observation`` decided by an LLM executor;
- ``condition: always`` becomes an ``always`` edge; a structured condition becomes a ``when``
  predicate on the step that calls the tested API (it must be the step just before);
  ``condition_type: if`` (SOP-agent's natural-language branching) becomes a ``when`` whose
  condition is the step's description, decided by an LLM router;
- every ``goto`` target gets ``max_visits`` (SOP-agent leaves loops unbounded);
- the first top-level step is the entry ``default``.

Example:
    >>> sop = import_sopagent(Path("sop_agent.yaml").read_text(), "sop_agent.yaml")  # doctest: +SKIP
    >>> print(dump_sop_yaml(sop))                                                   # doctest: +SKIP
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sopgraph.graphs.importers.native_yaml import dump_sop_yaml
from sopgraph.graphs.importers.sopagent_steps import CONDITION_OPS, Step, StepParser, parse_steps
from sopgraph.graphs.loader import Problem, SopError, load_sop_text
from sopgraph.graphs.model import Sop

DEFAULT_MAX_VISITS = 3

_STOPWORDS = set(
    "a an the to of is are was be been for and or in on at by with from that this these it its "
    "as into any there their your you whether so has have do does then".split()
)
_LEADING = {"if", "else", "elif", "otherwise", "always", "then", "and"}


def _snake(name: str) -> str:
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def _slug(description: str, words: int = 5) -> str:
    """A node id from a description: its first content words, without "if"/"else if"."""
    tokens = re.findall(r"[a-z0-9]+", re.sub(r"'s\b", "", description.lower()))
    while tokens and tokens[0] in _LEADING:
        tokens.pop(0)
    slug = "_".join([t for t in tokens if t not in _STOPWORDS][:words]) or "step"
    return slug if slug[0].isalpha() else f"step_{slug}"


def _walk(steps: list[Step]) -> list[Step]:
    return [x for s in steps for x in (s, *_walk(s.children))]


def _assign_ids(steps: list[Step]) -> None:
    used: set[str] = set()
    for s in steps:
        base = (_snake(s.api["name"]) if s.api else _slug(s.description)) or "step"
        n, cand = 1, base
        while cand in used:  # the same API called from two places: escalate_..., escalate_..._2
            n += 1
            cand = f"{base}_{n}"
        used.add(cand)
        s.id = cand


def _kind(step: Step, nxt: dict[str, Any]) -> str:
    """An observation when the step's output (its API's, or an LLM's reading) picks children."""
    if nxt and (step.api or nxt.get("when")):
        return "observation"
    return "action"  # a leaf, or a step that acts and then always goes on


def _edges(
    parser: StepParser, step: Step, targets: list[tuple[Step, tuple[Any, ...]]]
) -> dict[str, Any]:
    """``next`` of ``step``: each target guarded by the target's own condition."""
    nxt: dict[str, Any] = {}
    when: list[dict[str, Any]] = []
    for child, where in targets:
        cond = child.cond
        if cond.kind in ("always", "none"):
            nxt.setdefault("always", []).append(child.id)
            continue
        if cond.kind == "predicate":
            called = step.api["name"] if step.api else None
            if cond.api != called:
                before = f"calls '{called}'" if called else "calls no API"
                parser.err(
                    where,
                    step.id,
                    f"condition of '{child.id}' tests API '{cond.api}' but the step before it "
                    f"{before}; a structured condition tests the output of the API called just before",
                )
                continue
            key: Any = cond.predicate
        else:
            key = cond.text
        same = next((e for e in when if e["if"] == key), None)
        if same is not None:
            same["then"].append(child.id)
        else:
            when.append({"if": key, "then": [child.id]})
    if when:
        nxt["when"] = when
    return nxt


def _labels(parser: StepParser, steps: list[Step]) -> dict[str, Step]:
    labels: dict[str, Step] = {}
    for s in steps:
        if s.label is None:
            continue
        if s.label in labels:
            first = parser.lines.of(*labels[s.label].path, "label")
            parser.err(
                (*s.path, "label"),
                s.id,
                f"label '{s.label}' is also used on line {first}; labels must be unique",
            )
        labels[s.label] = s
    return labels


def _nodes(parser: StepParser, steps: list[Step], max_visits: int) -> dict[str, dict[str, Any]]:
    labels = _labels(parser, steps)
    loop_targets: set[str] = set()
    nodes: dict[str, dict[str, Any]] = {}
    for s in steps:
        targets = [(c, c.path) for c in s.children]
        for name in s.goto:
            target = labels.get(name)
            if target is None:
                known = ", ".join(sorted(labels)) or "none"
                parser.err(
                    (*s.path, "goto"),
                    s.id,
                    f"goto '{name}' names no label (labels: {known}); add 'label: {name}' to the target step",
                )
                continue
            targets.append((target, (*s.path, "goto")))
            loop_targets.add(target.id)
        nxt = _edges(parser, s, targets)
        node: dict[str, Any] = {"kind": _kind(s, nxt)}
        if s.title:
            node["title"] = s.title
        node["text"] = s.description
        if s.api:
            node["api"] = s.api
            node["tool"] = _snake(s.api["name"])
        if nxt:
            node["next"] = nxt
        nodes[s.id] = node
    # Every cycle passes through a goto edge (Instructions form a tree), so bounding every
    # goto target bounds every loop.
    for nid in loop_targets:
        nodes[nid]["max_visits"] = max_visits
    return nodes


def import_sopagent(
    text: str, file: str, sop_id: str | None = None, max_visits: int = DEFAULT_MAX_VISITS
) -> Sop:
    """Convert SOP-agent pseudocode YAML into a validated native ``Sop``.

    Raises:
        SopError: one ``error: file:line: ...`` line per construct the importer cannot take.
    """
    roots, lines = parse_steps(text, file)
    parser = StepParser(file, lines)
    steps = _walk(roots)
    _assign_ids(steps)
    nodes = _nodes(parser, steps, max_visits)
    if parser.problems:
        raise SopError(parser.problems)
    first = roots[0]
    description = f"Imported from the SOP-agent pseudocode {Path(file).name}."
    if any("max_visits" in n for n in nodes.values()):
        description += (
            " SOP-agent leaves goto loops unbounded; here every goto target runs at most "
            f"{max_visits} times (max_visits): raise it where a loop needs more rounds."
        )
    sop = Sop.model_validate(
        {
            "id": sop_id or _snake(first.description) or "imported_sop",
            "title": first.description.replace("_", " ").capitalize(),
            "version": 1,
            "description": description,
            "entry": {"default": [first.id], **{r.id: [r.id] for r in roots[1:]}},
            "nodes": nodes,
        }
    )
    # Through the loader, so the result is exactly what `sopgraph` reads back from disk;
    # graph problems (say, a loop with no way out) are reported at the source step's line.
    try:
        return load_sop_text(dump_sop_yaml(sop), file, check=True)
    except SopError as exc:
        where = {s.id: s.path for s in steps}
        problems = [
            Problem(file, lines.of(*where.get(p.node, ())), p.node, p.message) for p in exc.problems
        ]
        raise SopError(problems) from None


__all__ = ["CONDITION_OPS", "DEFAULT_MAX_VISITS", "dump_sop_yaml", "import_sopagent"]
