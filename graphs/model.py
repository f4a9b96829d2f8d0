"""The SOP model: a decision graph of observation, root-cause, constraint and action nodes.

These pydantic models are the contract of the SOP file (one YAML file per SOP, docs/sop-format.md).
Structural checks that need the whole graph (reachability, loops, parameters) live in
``graphs/validate.py``; these models only check the shape of each piece.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

DECISION_KINDS = ("observation", "root_cause", "constraint")
NODE_KINDS = (*DECISION_KINDS, "action")
VERDICT_KEYS = ("true", "false", "no_data")
# Keys of a node's `next` mapping besides the structured `when` list.
EDGE_KEYS = (*VERDICT_KEYS, "always", "on_error")

# A loop's visit bound: more would only hide a loop that never exits.
MAX_VISITS = 100
PARAM = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""A ``{param}`` placeholder in a node's text: the parameter's name is its group."""
INPUT_TYPES = ("string", "integer", "number", "boolean", "datetime", "object", "list")

Op = Literal["eq", "ne", "lt", "le", "gt", "ge", "in", "not_in", "contains", "exists"]


class Predicate(BaseModel):
    """A structured condition over a node's output: ``{var, op, value}``.

    ``var`` names a key of the node's ``observed`` mapping (dotted for nesting), or
    ``value`` / ``observed`` for the verdict itself.
    """

    model_config = ConfigDict(extra="forbid")
    var: str
    op: Op = "eq"
    value: Any = None


class Condition(BaseModel):
    """One entry of ``next.when``: children that run when ``if`` holds.

    ``if`` is either a structured predicate (decided by code) or a natural-language
    condition (a string, decided by an LLM router).
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    if_: Predicate | str = Field(alias="if")
    then: list[str]

    @property
    def is_natural_language(self) -> bool:
        return isinstance(self.if_, str)


class Next(BaseModel):
    """Where a node's run leads. Several lists may fire at once; all their nodes run."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    true: list[str] = Field(default_factory=list, alias="true")
    false: list[str] = Field(default_factory=list, alias="false")
    no_data: list[str] = Field(default_factory=list)
    always: list[str] = Field(default_factory=list)
    on_error: list[str] = Field(default_factory=list)
    when: list[Condition] = Field(default_factory=list)

    @field_validator("true", "false", "no_data", "always", "on_error", mode="before")
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    def edges(self) -> list[tuple[str, str]]:
        """All ``(label, child)`` pairs, in file order."""
        out: list[tuple[str, str]] = []
        for key in EDGE_KEYS:
            out += [(key, c) for c in getattr(self, key)]
        for cond in self.when:
            label = cond.if_ if isinstance(cond.if_, str) else _predicate_label(cond.if_)
            out += [(label, c) for c in cond.then]
        return out

    def children(self) -> list[str]:
        seen: dict[str, None] = {}
        for _, child in self.edges():
            seen.setdefault(child, None)
        return list(seen)


def _predicate_label(p: Predicate) -> str:
    return f"{p.var} {p.op} {p.value!r}"


class Api(BaseModel):
    """A function the node calls (SOP-agent's ``API``): name and description."""

    model_config = ConfigDict(extra="forbid")
    name: str
    description: str = ""


class Node(BaseModel):
    """One SOP node. Decision nodes end in a verdict; action nodes record an action."""

    model_config = ConfigDict(extra="forbid")
    id: str = ""
    kind: str
    title: str = ""
    text: str = ""
    data: list[str] = Field(default_factory=list)
    api: Api | None = None
    tool: str | None = None  # registry name; defaults to the node id
    next: Next = Field(default_factory=Next)
    cost: Literal["low", "medium", "high"] = "low"
    approval: Literal["none", "required"] = "none"
    max_visits: int | None = None
    # The written procedure text this node encodes (a guideline's sentence, with where it is),
    # so an auditor can trace a step back to its rule; never read by the executors.
    source: str = ""

    @field_validator("max_visits", mode="before")
    @classmethod
    def _whole_visits(cls, v: Any) -> Any:
        if v is not None and (
            isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_VISITS
        ):
            raise ValueError(f"must be a whole number from 1 to {MAX_VISITS}")
        return v

    @property
    def is_action(self) -> bool:
        return self.kind == "action"

    @property
    def tool_name(self) -> str:
        return self.tool or self.id


class InputField(BaseModel):
    """One field of an SOP's run input: its type, whether it is required, an example.

    ``required_for`` lists entry types that need the field when it is not required by all.
    """

    model_config = ConfigDict(extra="forbid")
    type: Literal[INPUT_TYPES] = "string"  # type: ignore[valid-type]
    required: bool = False
    required_for: list[str] = Field(default_factory=list)
    description: str = ""
    example: Any = None
    values: list[Any] | None = None  # the allowed values, when only a few are

    def required_by(self, entry_type: str | None) -> bool:
        return self.required or (entry_type is not None and entry_type in self.required_for)


class Sop(BaseModel):
    """A whole SOP file."""

    model_config = ConfigDict(extra="forbid")
    id: str
    title: str = ""
    version: int = Field(default=1, ge=1, le=1_000_000, strict=True)
    description: str = ""
    params: dict[str, Any] = Field(default_factory=dict)
    # The input field whose value picks ``params/<value>.yaml`` to overlay on ``params`` (a
    # site, a customer, a region); None: every run uses the defaults.
    params_by: str | None = None
    # The run input's fields (besides ``type``, which picks the entry); validated before a run.
    input: dict[str, InputField] = Field(default_factory=dict)
    entry: dict[str, list[str]]
    nodes: dict[str, Node]

    @field_validator("entry", mode="before")
    @classmethod
    def _entry_lists(cls, v: Any) -> Any:
        if isinstance(v, dict):
            return {k: [x] if isinstance(x, str) else x for k, x in v.items()}
        return v

    @model_validator(mode="after")
    def _fill_ids(self) -> Sop:
        for node_id, node in self.nodes.items():
            node.id = node_id
        return self

    @property
    def decision_nodes(self) -> list[Node]:
        return [n for n in self.nodes.values() if not n.is_action]

    @property
    def action_nodes(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.is_action]

    def edge_count(self) -> int:
        entry = sum(len(v) for v in self.entry.values())
        return entry + sum(len(n.next.edges()) for n in self.nodes.values())

    def render_text(self, node: Node, params: dict[str, Any] | None = None) -> str:
        """The node text with ``{param}`` placeholders filled from ``params`` or defaults."""
        text = node.text
        if "{" not in text:
            return text
        values = {**self.params, **(params or {})}
        for name, value in values.items():
            key = "{" + name + "}"
            if key in text:  # the same replacements, without formatting absent values
                text = text.replace(key, str(value))
        return text


class Verdict(BaseModel):
    """What a decision node concludes. ``no_data`` is only for missing data."""

    model_config = ConfigDict(extra="forbid")
    value: Literal["true", "false", "no_data"]
    observed: Any = None
    threshold: Any = None
    explanation: str = ""

    @field_validator("value", mode="before")
    @classmethod
    def _bool_to_str(cls, v: Any) -> Any:
        if isinstance(v, bool):
            return "true" if v else "false"
        if v is None:
            return "no_data"
        return v
