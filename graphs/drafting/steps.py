"""One drafting step's form and the SOP assembled from the steps' answers.

A step fills one section: for each of its procedure sentences, the sentence's role (a
decision, an action, or context that encodes no step), where its verdicts lead (a node id of
another sentence, an outcome node, or ``end``) and, with a catalog, the data that decides it.
Its JSON schema lists every id, outcome and catalog name as an enumeration, so an answer can be
wrong but never name something that does not exist. Numbers, citations and outcome nodes are
not asked of the model: they follow from the document.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from sopgraph.graphs.drafting.document import Document, Sentence
from sopgraph.graphs.drafting.numbers import Comparison, find_comparisons, with_placeholders
from sopgraph.graphs.drafting.outcomes import Outcome, slug

ROLES = ("decision", "action", "context")
END = "end"
NONE = "none"
_STOP = {"the", "a", "an", "of", "if", "is", "are", "to", "and", "or", "for", "any", "that", "it"}


def sentence_id(s: Sentence) -> str:
    words = [w for w in re.findall(r"[a-z0-9]+", s.text.lower()) if w not in _STOP][:4]
    return "_".join([f"s{s.number}", *words])


def outcome_id(o: Outcome) -> str:
    return f"answer_{slug(o.value)}"


@dataclass
class Plan:
    """What the document fixes before any model step: the sentences to fill (by section), their
    node ids, the outcome nodes, the numbers compared and the catalog's names."""

    doc: Document
    outcomes: list[Outcome]
    catalog: list[str] | None = None
    ids: dict[int, str] = field(default_factory=dict)  # sentence number -> node id
    comparisons: dict[int, list[Comparison]] = field(default_factory=dict)
    sections: list[list[Sentence]] = field(default_factory=list)

    @classmethod
    def of(cls, doc: Document, outcomes: list[Outcome], catalog: list[str] | None = None) -> Plan:
        plan = cls(doc, outcomes, catalog)
        stated = {o.sentence for o in outcomes}
        taken: set[str] = set()
        for sec in doc.sections:
            steps = [s for s in sec.sentences if s.procedural and s.number not in stated]
            for s in steps:
                plan.ids[s.number] = sentence_id(s)
                plan.comparisons[s.number] = find_comparisons(s.text, s.number, taken)
            if steps:
                plan.sections.append(steps)
        return plan

    @property
    def targets(self) -> list[str]:
        answers = list(dict.fromkeys(outcome_id(o) for o in self.outcomes))
        return [*self.ids.values(), *answers, END]

    def schema(self, section: list[Sentence]) -> dict[str, Any]:
        """The step's reply schema (llama.cpp's ``json_object`` dialect): one object per
        sentence of ``section``, its fields enumerations."""
        step: dict[str, Any] = {
            "role": {"enum": list(ROLES)},
            "then": {"enum": self.targets},
            "else": {"enum": self.targets},
        }
        if self.catalog:
            step["data"] = {"enum": [NONE, *self.catalog]}
        one = {"type": "object", "properties": step, "required": list(step),
               "additionalProperties": False}  # fmt: skip
        keys = [f"s{s.number}" for s in section]
        steps = {"type": "object", "properties": dict.fromkeys(keys, one), "required": keys,
                 "additionalProperties": False}  # fmt: skip
        return {"type": "json_object", "schema": {
            "type": "object", "properties": {"steps": steps}, "required": ["steps"]}}  # fmt: skip

    def render_section(self, section: list[Sentence]) -> str:
        return "\n".join(f"s{s.number} ({self.ids[s.number]}): {s.text}" for s in section)

    def render_targets(self) -> str:
        lines = [f"{i}: {_short(self.doc.sentence(n).text)}" for n, i in self.ids.items()]
        lines += [f"{outcome_id(o)}: the outcome '{o.value}'" for o in self.outcomes]
        return "\n".join([*lines, f"{END}: the procedure ends here"])


def _short(text: str, width: int = 90) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def clean_answer(raw: Any, section: list[Sentence], plan: Plan) -> dict[int, dict[str, str]]:
    """A step's answer as ``sentence number -> fields``, dropping what the schema would not
    allow (a reply from a model not held to the schema may hold anything)."""
    steps = raw.get("steps", raw) if isinstance(raw, dict) else {}
    out: dict[int, dict[str, str]] = {}
    targets = set(plan.targets)
    for s in section:
        got = steps.get(f"s{s.number}") if isinstance(steps, dict) else None
        got = got if isinstance(got, dict) else {}
        role = got.get("role") if got.get("role") in ROLES else "context"
        step = {"role": role}
        for key in ("then", "else"):
            value = got.get(key)
            step[key] = value if value in targets else END
        data = got.get("data")
        step["data"] = data if plan.catalog and data in plan.catalog else NONE
        out[s.number] = step
    return out


def assemble(
    plan: Plan, answers: dict[int, dict[str, str]], sop_id: str | None = None
) -> tuple[dict[str, Any], list[int]]:
    """The SOP (as the mapping its YAML holds) from every sentence's answer, and the sentences
    answered ``context`` (unused)."""
    doc = plan.doc
    nodes: dict[str, Any] = {}
    params: dict[str, Any] = {}
    unused: list[int] = []
    for number, step in sorted(answers.items()):
        s = doc.sentence(number)
        if s is None or step["role"] == "context":
            unused.append(number)
            continue
        nid = plan.ids[number]
        comps = plan.comparisons.get(number, [])
        params.update({c.name: c.value for c in comps})
        node: dict[str, Any] = {"kind": "action" if step["role"] == "action" else
                                ("constraint" if comps else "observation")}  # fmt: skip
        # braces in the prose would read as placeholders; the swap keeps every offset
        text = s.text.replace("{", "(").replace("}", ")")
        node["text"] = with_placeholders(text, comps).strip()
        if step["role"] == "decision" and step.get("data", NONE) != NONE:
            node["data"] = [step["data"]]
        nxt: dict[str, list[str]] = {}
        then, other = step["then"], step["else"]
        if then != END and then != nid:
            nxt["true"] = [then]
        if step["role"] == "decision" and other != END and other != nid:
            nxt["false"] = [other]
        if nxt:
            node["next"] = nxt
        node["source"] = f"{s.cite} {s.text}"
        nodes[nid] = node
    for o in plan.outcomes:
        oid = outcome_id(o)
        s = doc.sentence(o.sentence)
        cite = f"{s.cite} {s.text}" if s else f"(s{o.sentence})"
        if oid in nodes:
            nodes[oid]["source"] += f"; {cite}"
            continue
        nodes[oid] = {"kind": "action", "title": f"{o.field}: {o.value}", "text": s.text if s else o.value,
                      "source": cite}  # fmt: skip
    first = next((i for i, n in nodes.items() if n["kind"] != "action"), None)
    sop: dict[str, Any] = {
        "id": sop_id or slug(doc.title, "drafted_sop"),
        "title": doc.title,
        "version": 1,
        "description": f"Drafted by sopgraph draft from {doc.file}; review before publishing.",
    }
    if params:
        sop["params"] = params
    sop["entry"] = {"default": [first] if first else []}
    sop["nodes"] = nodes
    return sop, unused


def to_yaml(sop: dict[str, Any]) -> str:
    return yaml.safe_dump(sop, sort_keys=False, width=100, allow_unicode=True)
