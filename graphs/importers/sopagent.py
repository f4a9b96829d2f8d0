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
  a step with no children is an ``action`` (keeping its ``api``); a step with children but
  no API is an ``action`` too (the agent acts, then moves on);
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphs.importers.native_yaml import dump_sop_yaml
from graphs.loader import LineMap, Problem, SopError, load_sop_text, parse_yaml
from graphs.model import Sop

DEFAULT_MAX_VISITS = 3

# SOP-agent's condition_type -> native predicate op. The paper's benchmark only shows "is";
# its simulator also produces booleans and numbers compared to thresholds, hence the rest.
CONDITION_OPS: dict[str, str] = {
    "is": "eq",
    "equals": "eq",
    "equal": "eq",
    "==": "eq",
    "is_not": "ne",
    "not_equals": "ne",
    "!=": "ne",
    "greater_than": "gt",
    ">": "gt",
    "greater_than_or_equal": "ge",
    "greater_than_or_equal_to": "ge",
    "at_least": "ge",
    ">=": "ge",
    "less_than": "lt",
    "<": "lt",
    "less_than_or_equal": "le",
    "less_than_or_equal_to": "le",
    "at_most": "le",
    "<=": "le",
    "in": "in",
    "one_of": "in",
    "not_in": "not_in",
    "contains": "contains",
    "exists": "exists",
}

_FIELDS = {
    "condition": "condition",
    "condition_type": "condition_type",
    "api": "API",
    "instructions": "Instructions",
    "description": "Description",
    "label": "label",
    "goto": "goto",
}
_CONDITION_KEYS = ("API", "variable", "condition_type", "value")
_STOPWORDS = set(
    "a an the to of is are was be been for and or in on at by with from that this these it its "
    "as into any there their your you whether so has have do does then".split()
)
_LEADING = {"if", "else", "elif", "otherwise", "always", "then", "and"}


@dataclass
class _Cond:
    kind: str  # "always" | "predicate" | "text" | "none" (top level)
    api: str = ""
    predicate: dict[str, Any] = field(default_factory=dict)
    text: str = ""


@dataclass
class _Step:
    path: tuple[Any, ...]
    description: str
    title: str = ""
    api: dict[str, str] | None = None
    cond: _Cond = field(default_factory=lambda: _Cond("none"))
    label: str | None = None
    goto: list[str] = field(default_factory=list)
    children: list[_Step] = field(default_factory=list)
    id: str = ""


class _Importer:
    def __init__(self, file: str, lines: LineMap):
        self.file = file
        self.lines = lines
        self.problems: list[Problem] = []

    def err(self, path: tuple[Any, ...], node: str, message: str) -> None:
        self.problems.append(Problem(self.file, self.lines.of(*path), node, message))

    # -- parsing -------------------------------------------------------------------------

    def steps(self, items: Any, path: tuple[Any, ...], top: bool) -> list[_Step]:
        if isinstance(items, dict) and top:
            items = [items]  # a file holding one step without the leading "- "
        if not isinstance(items, list):
            where = "the file" if top else "Instructions"
            self.err(path, "", f"{where} must be a YAML list of steps, each '- <description>:'")
            return []
        out = []
        for i, item in enumerate(items):
            step = self.step(item, (*path, i), top)
            if step is not None:
                out.append(step)
        return out

    def step(self, item: Any, path: tuple[Any, ...], top: bool) -> _Step | None:
        if not isinstance(item, dict):
            self.err(path, "", "a step is a mapping: '- <description>:' followed by its fields")
            return None
        fields: dict[str, tuple[Any, tuple[Any, ...]]] = {}
        descriptions: list[str] = []
        (first_key, first_value), *_ = item.items() if item else [(None, None)]
        if (
            len(item) == 1
            and isinstance(first_value, dict)
            and str(first_key).strip().lower() not in _FIELDS
        ):
            # Fields indented under the description (``- desc:\n    API: ...``) also parse.
            descriptions.append(str(first_key))
            entries = [(k, v, (*path, first_key, k)) for k, v in first_value.items()]
        else:
            entries = [(k, v, (*path, k)) for k, v in item.items()]
        for key, value, kpath in entries:
            name = _FIELDS.get(str(key).strip().lower())
            if name is not None:
                fields[name] = (value, kpath)
            elif value is None:
                descriptions.append(str(key))
            else:
                self.err(
                    kpath,
                    "",
                    f"unknown field '{key}'; a step takes its description then "
                    "condition, API, Description, Instructions, label, goto",
                )
        if len(descriptions) != 1:
            what = "no description" if not descriptions else "more than one description"
            self.err(
                path,
                "",
                f"step has {what}; start each step with one '- <what to do>:' line "
                "(a description containing ': ' must be quoted)",
            )
            return None
        step = _Step(path=path, description=" ".join(descriptions[0].split()))
        if "Description" in fields:
            step.title = " ".join(str(fields["Description"][0]).split())
        if "API" in fields:
            step.api = self.api(*fields["API"])
        step.cond = self.condition(fields, path, step.description, top)
        if "label" in fields:
            step.label = str(fields["label"][0]).strip()
        if "goto" in fields:
            step.goto = self.goto(*fields["goto"])
        if "Instructions" in fields:
            value, ipath = fields["Instructions"]
            if value is not None:
                step.children = self.steps(value, ipath, top=False)
        return step

    def api(self, value: Any, path: tuple[Any, ...]) -> dict[str, str] | None:
        if isinstance(value, str) and value.strip():
            return {"name": value.strip(), "description": ""}
        if isinstance(value, dict) and isinstance(value.get("name"), str):
            extra = set(value) - {"name", "description"}
            if extra:
                self.err(path, "", f"API has unknown key '{sorted(extra)[0]}'; use name, description")
            return {"name": value["name"].strip(), "description": str(value.get("description") or "")}
        self.err(path, "", 'API must be a name or {"name": ..., "description": ...}')
        return None

    def goto(self, value: Any, path: tuple[Any, ...]) -> list[str]:
        if isinstance(value, list):
            return [str(v).strip() for v in value]
        if isinstance(value, str | int):
            return [s.strip() for s in str(value).split(",") if s.strip()]
        self.err(path, "", "goto must be a label or a comma-separated list of labels")
        return []

    def condition(
        self, fields: dict[str, tuple[Any, tuple[Any, ...]]], path: tuple[Any, ...], desc: str, top: bool
    ) -> _Cond:
        if "condition" in fields and "condition_type" in fields:
            self.err(
                fields["condition_type"][1],
                "",
                "step has both 'condition' and 'condition_type'; keep one",
            )
            return _Cond("none")
        if "condition" in fields:
            value, cpath = fields["condition"]
            if isinstance(value, dict):
                cond = self.structured(value, cpath)
                if top and cond.kind == "predicate":
                    self.err(cpath, "", "a top-level step cannot test an API: nothing ran before it")
                return cond
            if isinstance(value, str) and value.strip().lower() == "always":
                return _Cond("always")
            if isinstance(value, str) and value.strip().lower() == "if":
                return _Cond("text", text=desc)
            if isinstance(value, str) and value.strip():
                return _Cond("text", text=" ".join(value.split()))
            self.err(cpath, "", 'condition must be "always", a text, or {API, variable, condition_type, value}')
            return _Cond("none")
        if "condition_type" in fields:
            value, cpath = fields["condition_type"]
            kind = str(value).strip().lower()
            if kind == "always":
                return _Cond("always")
            if kind == "if":
                return _Cond("text", text=desc)
            self.err(
                cpath,
                "",
                f"condition_type '{value}' is not a step condition; use always or if, or a "
                "structured condition {API, variable, condition_type, value}",
            )
            return _Cond("none")
        if not top:
            self.err(path, "", "step has no condition; add 'condition: always' or a structured condition")
        return _Cond("none")

    def structured(self, value: dict[str, Any], path: tuple[Any, ...]) -> _Cond:
        missing = [k for k in _CONDITION_KEYS if k not in value and not (k == "value" and _op_of(value) == "exists")]
        extra = [k for k in value if k not in _CONDITION_KEYS]
        if missing or extra:
            what = f"lacks '{missing[0]}'" if missing else f"has unknown key '{extra[0]}'"
            self.err(path, "", f"condition {what}; a structured condition is {{API, variable, condition_type, value}}")
            return _Cond("none")
        op = _op_of(value)
        if op is None:
            self.err(
                (*path, "condition_type"),
                "",
                f"unsupported condition_type '{value['condition_type']}'; use one of: "
                + ", ".join(k for k in CONDITION_OPS if k.isidentifier()),
            )
            return _Cond("none")
        if op in ("in", "not_in") and not isinstance(value.get("value"), list):
            self.err((*path, "value"), "", f"condition_type '{value['condition_type']}' needs a list value")
            return _Cond("none")
        pred: dict[str, Any] = {"var": str(value["variable"]), "op": op}
        if op != "exists":
            pred["value"] = value["value"]
        return _Cond("predicate", api=str(value["API"]), predicate=pred)


def _op_of(cond: dict[str, Any]) -> str | None:
    return CONDITION_OPS.get(str(cond.get("condition_type", "")).strip().lower())


def _snake(name: str) -> str:
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def _slug(description: str, words: int = 5) -> str:
    text = re.sub(r"'s\b", "", description.lower())
    tokens = re.findall(r"[a-z0-9]+", text)
    while tokens and tokens[0] in _LEADING:
        tokens.pop(0)
    kept = [t for t in tokens if t not in _STOPWORDS][:words]
    slug = "_".join(kept) or "step"
    return slug if slug[0].isalpha() else f"step_{slug}"


def _walk(steps: list[_Step]) -> list[_Step]:
    out: list[_Step] = []
    for s in steps:
        out.append(s)
        out += _walk(s.children)
    return out


def _assign_ids(steps: list[_Step]) -> None:
    used: set[str] = set()
    for s in steps:
        base = (_snake(s.api["name"]) if s.api else _slug(s.description)) or "step"
        n, cand = 1, base
        while cand in used:  # the same API called from two places: escalate_..., escalate_..._2
            n += 1
            cand = f"{base}_{n}"
        used.add(cand)
        s.id = cand


def _edges(imp: _Importer, step: _Step, targets: list[tuple[_Step, tuple[Any, ...]]]) -> dict[str, Any]:
    nxt: dict[str, Any] = {}
    when: list[dict[str, Any]] = []
    for child, where in targets:
        cond = child.cond
        if cond.kind == "always" or cond.kind == "none":
            nxt.setdefault("always", []).append(child.id)
            continue
        if cond.kind == "predicate":
            called = step.api["name"] if step.api else None
            if cond.api != called:
                before = f"calls '{called}'" if called else "calls no API"
                imp.err(
                    where,
                    step.id,
                    f"condition of '{child.id}' tests API '{cond.api}' but the step before it "
                    f"{before}; a structured condition tests the output of the API called just before",
                )
                continue
            key: Any = cond.predicate
        else:
            key = cond.text
        for entry in when:
            if entry["if"] == key:
                entry["then"].append(child.id)
                break
        else:
            when.append({"if": key, "then": [child.id]})
    if when:
        nxt["when"] = when
    return nxt


def import_sopagent(
    text: str, file: str, sop_id: str | None = None, max_visits: int = DEFAULT_MAX_VISITS
) -> Sop:
    """Convert SOP-agent pseudocode YAML into a validated native ``Sop``.

    Raises:
        SopError: one ``error: file:line: ...`` line per construct the importer cannot take.
    """
    data, lines = parse_yaml(text, file)
    imp = _Importer(file, lines)
    if data is None:
        raise SopError([Problem(file, 1, "", "empty file; an SOP-agent SOP is a list of '- <step>:'")])
    roots = imp.steps(data, (), top=True)
    if imp.problems:
        raise SopError(imp.problems)
    if not roots:
        raise SopError([Problem(file, 1, "", "no steps; an SOP-agent SOP is a list of '- <step>:'")])
    every = _walk(roots)
    _assign_ids(every)

    labels: dict[str, _Step] = {}
    for s in every:
        if s.label is None:
            continue
        if s.label in labels:
            first = lines.of(*labels[s.label].path, "label")
            imp.err((*s.path, "label"), s.id, f"label '{s.label}' is also used on line {first}; labels must be unique")
        labels[s.label] = s
    loop_targets: set[str] = set()
    nodes: dict[str, dict[str, Any]] = {}
    for s in every:
        targets = [(c, c.path) for c in s.children]
        for name in s.goto:
            target = labels.get(name)
            if target is None:
                known = ", ".join(sorted(labels)) or "none"
                imp.err((*s.path, "goto"), s.id, f"goto '{name}' names no label (labels: {known}); add 'label: {name}' to the target step")
                continue
            targets.append((target, (*s.path, "goto")))
            loop_targets.add(target.id)
        node: dict[str, Any] = {"kind": "observation" if (targets and s.api) else "action"}
        if s.title:
            node["title"] = s.title
        node["text"] = s.description
        if s.api:
            node["api"] = s.api
            node["tool"] = _snake(s.api["name"])
        nxt = _edges(imp, s, targets)
        if nxt:
            node["next"] = nxt
        nodes[s.id] = node
    if imp.problems:
        raise SopError(imp.problems)
    for nid in loop_targets:
        nodes[nid]["max_visits"] = max_visits

    first = roots[0]
    entry = {"default": [first.id]}
    for r in roots[1:]:
        entry[r.id] = [r.id]
    name = Path(file).name
    description = f"Imported from the SOP-agent pseudocode {name}."
    if loop_targets:
        description += (
            f" SOP-agent leaves goto loops unbounded; here every goto target runs at most "
            f"{max_visits} times (max_visits): raise it where a loop needs more rounds."
        )
    raw = {
        "id": sop_id or _snake(first.description) or "imported_sop",
        "title": first.description.replace("_", " ").capitalize(),
        "version": 1,
        "description": description,
        "entry": entry,
        "nodes": nodes,
    }
    sop = Sop.model_validate(raw)
    # Through the loader, so the result is exactly what `sopgraph` will read back from disk.
    return load_sop_text(dump_sop_yaml(sop), f"{file} (imported)", check=_validator_ready())


def _validator_ready() -> bool:
    try:
        import graphs.validate  # noqa: F401
    except ImportError:  # validate.py is written in parallel; until then, shape checks only
        return False
    return True
