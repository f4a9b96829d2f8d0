"""Parse SOP-agent pseudocode YAML into a tree of steps, every mistake reported with its line.

A step is a mapping whose description is a key with no value and whose other keys are its
fields (``condition`` or ``condition_type``, ``API``, ``Description``, ``Instructions``,
``label``, ``goto``). Fields indented under the description are accepted too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sopgraph.graphs.loader import LineMap, Problem, SopError, parse_yaml

# SOP-agent's condition_type -> native predicate op. The paper's benchmark shows only "is";
# its simulator also returns booleans and numbers compared with thresholds, hence the rest.
CONDITION_OPS: dict[str, str] = {
    **dict.fromkeys(["is", "equals", "equal", "=="], "eq"),
    **dict.fromkeys(["is_not", "not_equals", "!="], "ne"),
    **dict.fromkeys(["greater_than", ">"], "gt"),
    **dict.fromkeys(["greater_than_or_equal", "greater_than_or_equal_to", "at_least", ">="], "ge"),
    **dict.fromkeys(["less_than", "<"], "lt"),
    **dict.fromkeys(["less_than_or_equal", "less_than_or_equal_to", "at_most", "<="], "le"),
    **dict.fromkeys(["in", "one_of"], "in"),
    "not_in": "not_in",
    "contains": "contains",
    "exists": "exists",
}

FIELDS = {
    "condition": "condition",
    "condition_type": "condition_type",
    "api": "API",
    "instructions": "Instructions",
    "description": "Description",
    "label": "label",
    "goto": "goto",
}
_CONDITION_KEYS = ("API", "variable", "condition_type", "value")
_SHAPE = "a structured condition is {API, variable, condition_type, value}"

KeyPath = tuple[Any, ...]  # a key path into the YAML document, for LineMap


@dataclass
class Condition:
    """What guards the edge into a step."""

    kind: str  # "always" | "predicate" | "text" | "none" (a top-level step)
    api: str = ""  # predicate: the API whose output it tests
    predicate: dict[str, Any] = field(default_factory=dict)  # {var, op[, value]}
    text: str = ""  # text: the natural-language condition


@dataclass
class Step:
    """One pseudocode step; ``children`` are its ``Instructions``."""

    path: KeyPath
    description: str
    title: str = ""
    api: dict[str, str] | None = None
    cond: Condition = field(default_factory=lambda: Condition("none"))
    label: str | None = None
    goto: list[str] = field(default_factory=list)
    children: list[Step] = field(default_factory=list)
    id: str = ""  # assigned by the importer


def _clean(text: Any) -> str:
    return " ".join(str(text).split())


class StepParser:
    """Turns the parsed YAML into steps, collecting every problem instead of stopping."""

    def __init__(self, file: str, lines: LineMap):
        self.file = file
        self.lines = lines
        self.problems: list[Problem] = []

    def err(self, path: KeyPath, node: str, message: str) -> None:
        self.problems.append(Problem(self.file, self.lines.of(*path), node, message))

    def steps(self, items: Any, path: KeyPath, top: bool) -> list[Step]:
        if isinstance(items, dict) and top:
            items = [items]  # a file holding one step without the leading "- "
        if not isinstance(items, list):
            where = "the file" if top else "Instructions"
            self.err(path, "", f"{where} must be a YAML list of steps, each '- <description>:'")
            return []
        steps = [self.step(item, (*path, i), top) for i, item in enumerate(items)]
        return [s for s in steps if s is not None]

    def _entries(self, item: dict[Any, Any], path: KeyPath) -> list[tuple[Any, Any, KeyPath]]:
        """``(key, value, path)`` of the step's keys, looking through an indented body."""
        if len(item) == 1:
            ((key, body),) = item.items()
            if isinstance(body, dict) and str(key).strip().lower() not in FIELDS:
                return [(key, None, path)] + [(k, v, (*path, key, k)) for k, v in body.items()]
        return [(k, v, (*path, k)) for k, v in item.items()]

    def step(self, item: Any, path: KeyPath, top: bool) -> Step | None:
        if not isinstance(item, dict):
            self.err(path, "", "a step is a mapping: '- <description>:' followed by its fields")
            return None
        fields: dict[str, tuple[Any, KeyPath]] = {}
        descriptions: list[str] = []
        for key, value, kpath in self._entries(item, path):
            name = FIELDS.get(str(key).strip().lower())
            if name is not None:
                fields[name] = (value, kpath)
            elif value is None:
                descriptions.append(str(key))
            else:
                self.err(
                    kpath,
                    "",
                    f"unknown field '{key}'; a step takes its description, then "
                    "condition, API, Description, Instructions, label, goto",
                )
        if len(descriptions) != 1:
            what = "no description" if not descriptions else "more than one description"
            self.err(
                path,
                "",
                f"step has {what}; start each step with one '- <what to do>:' line "
                "(quote a description that contains ': ')",
            )
            return None
        step = Step(path=path, description=_clean(descriptions[0]))
        if "Description" in fields:
            step.title = _clean(fields["Description"][0])
        if "API" in fields:
            step.api = self.api(*fields["API"])
        step.cond = self.condition(fields, path, step.description, top)
        if "label" in fields:
            step.label = str(fields["label"][0]).strip()
        if "goto" in fields:
            step.goto = self.goto(*fields["goto"])
        value, ipath = fields.get("Instructions", (None, path))
        if value is not None:
            step.children = self.steps(value, ipath, top=False)
        return step

    def api(self, value: Any, path: KeyPath) -> dict[str, str] | None:
        if isinstance(value, str) and value.strip():
            return {"name": value.strip(), "description": ""}
        if isinstance(value, dict) and isinstance(value.get("name"), str):
            extra = sorted(set(value) - {"name", "description"})
            if extra:
                self.err(path, "", f"API has unknown key '{extra[0]}'; use name, description")
            return {
                "name": value["name"].strip(),
                "description": _clean(value.get("description") or ""),
            }
        self.err(path, "", 'API must be a name or {"name": ..., "description": ...}')
        return None

    def goto(self, value: Any, path: KeyPath) -> list[str]:
        if isinstance(value, list):
            return [str(v).strip() for v in value]
        if isinstance(value, str | int):  # labels such as 101 parse as numbers
            return [s.strip() for s in str(value).split(",") if s.strip()]
        self.err(path, "", "goto must be a label or a comma-separated list of labels")
        return []

    def condition(
        self, fields: dict[str, tuple[Any, KeyPath]], path: KeyPath, desc: str, top: bool
    ) -> Condition:
        if "condition" in fields and "condition_type" in fields:
            self.err(
                fields["condition_type"][1],
                "",
                "step has both 'condition' and 'condition_type'; keep one",
            )
            return Condition("none")
        if "condition" in fields:
            value, cpath = fields["condition"]
            if isinstance(value, dict):
                cond = self.structured(value, cpath)
                if top and cond.kind == "predicate":
                    self.err(
                        cpath, "", "a top-level step cannot test an API: nothing ran before it"
                    )
                return cond
            word = str(value).strip().lower() if isinstance(value, str) else ""
            if word == "always":
                return Condition("always")
            if word == "if":
                return Condition("text", text=desc)
            if word:
                return Condition("text", text=_clean(value))
            self.err(cpath, "", f'condition must be "always", a text, or structured: {_SHAPE}')
            return Condition("none")
        if "condition_type" in fields:
            value, cpath = fields["condition_type"]
            word = str(value).strip().lower()
            if word == "always":
                return Condition("always")
            if word == "if":  # the description itself says when ("if the task is ...")
                return Condition("text", text=desc)
            self.err(
                cpath,
                "",
                f"condition_type '{value}' is not a step condition; use always or if, or "
                f"'condition:' with {_SHAPE}",
            )
            return Condition("none")
        if not top:
            self.err(
                path, "", "step has no condition; add 'condition: always' or a structured condition"
            )
        return Condition("none")

    def structured(self, value: dict[str, Any], path: KeyPath) -> Condition:
        op = CONDITION_OPS.get(str(value.get("condition_type", "")).strip().lower())
        missing = [
            k for k in _CONDITION_KEYS if k not in value and not (k == "value" and op == "exists")
        ]
        extra = [k for k in value if k not in _CONDITION_KEYS]
        if missing or extra:
            what = f"lacks '{missing[0]}'" if missing else f"has unknown key '{extra[0]}'"
            self.err(path, "", f"condition {what}; {_SHAPE}")
            return Condition("none")
        if op is None:
            known = ", ".join(k for k in CONDITION_OPS if k.isidentifier())
            self.err(
                (*path, "condition_type"),
                "",
                f"unsupported condition_type '{value['condition_type']}'; use one of: {known}",
            )
            return Condition("none")
        if op in ("in", "not_in") and not isinstance(value["value"], list):
            self.err(
                (*path, "value"),
                "",
                f"condition_type '{value['condition_type']}' needs a list value",
            )
            return Condition("none")
        pred: dict[str, Any] = {"var": str(value["variable"]), "op": op}
        if op != "exists":
            pred["value"] = value["value"]
        return Condition("predicate", api=str(value["API"]), predicate=pred)


def parse_steps(text: str, file: str) -> tuple[list[Step], LineMap]:
    """The top-level steps of a pseudocode file and its line map.

    Raises:
        SopError: YAML syntax, or one problem per step the parser cannot take.
    """
    data, lines = parse_yaml(text, file)
    if data is None:
        raise SopError(
            [Problem(file, 1, "", "empty file; an SOP-agent SOP is a list of '- <step>:'")]
        )
    parser = StepParser(file, lines)
    roots = parser.steps(data, (), top=True)
    if parser.problems:
        raise SopError(parser.problems)
    if not roots:
        raise SopError(
            [Problem(file, 1, "", "no steps; an SOP-agent SOP is a list of '- <step>:'")]
        )
    return roots, lines
