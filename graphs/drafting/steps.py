"""One drafting step's form and the SOP assembled from the steps' answers.

A step fills one section: for each of its procedure sentences, the sentence's role (a
decision, an action, or context that encodes no step), the earlier step it follows and on
which result (``yes``, ``no``, ``always``: "If the check fails, ..." follows the check on
``no``), the outcome an action ends the procedure in, and, with a catalog, the data that
decides a decision. Prose states a branch where it happens, after the step it branches on, so
each sentence names its parent rather than its children.
Its JSON schema lists every id, outcome and catalog name as an enumeration, so an answer can be
wrong but never name something that does not exist. Numbers, citations and outcome nodes are
not asked of the model: they follow from the document.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from sopgraph.graphs.drafting.document import Document, Sentence, scope_of
from sopgraph.graphs.drafting.numbers import Comparison, find_comparisons, with_placeholders
from sopgraph.graphs.drafting.outcomes import Outcome, slug
from sopgraph.graphs.drafting.words import identifier_stems, stems

ROLES = ("decision", "action", "context")
WHEN = ("yes", "no", "always")  # which result of the earlier step leads to this one
START = "start"
NONE = "none"
_STOP = {"the", "a", "an", "of", "if", "is", "are", "to", "and", "or", "for", "any", "that", "it"}


def sentence_id(s: Sentence) -> str:
    words = [w for w in re.findall(r"[a-z0-9]+", s.text.lower()) if w not in _STOP][:4]
    return "_".join([f"s{s.number}", *words])


def outcome_id(o: Outcome) -> str:
    return f"answer_{slug(o.value)}"


@dataclass(frozen=True)
class CatalogEntry:
    """What a catalog name is about (a tool's description, the fields and values of the record
    it returns) and the arguments it requires (name -> JSON schema): a draft's decisions that
    read it take those as the run's input."""

    about: str = ""
    arguments: dict[str, dict[str, Any]] = field(default_factory=dict)


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
    scope: Sentence | None = None  # the opening statement: the entry observation
    about: dict[str, CatalogEntry] = field(default_factory=dict)  # catalog name -> entry

    @classmethod
    def of(cls, doc: Document, outcomes: list[Outcome], catalog: list[str] | None = None,
           about: dict[str, CatalogEntry] | None = None) -> Plan:  # fmt: skip
        plan = cls(doc, outcomes, catalog, about=about or {})
        stated = {o.sentence for o in outcomes}
        plan.scope = scope_of(doc, stated)
        if plan.scope is not None:
            stated.add(plan.scope.number)  # not a step: the entry observation
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
    def order(self) -> list[int]:
        return list(self.ids)

    def earlier(self, number: int) -> list[str]:
        """The ids a sentence may follow: every step before it in the document, and ``start``."""
        return [START, *(i for n, i in self.ids.items() if n < number)]

    @property
    def outcome_ids(self) -> list[str]:
        return list(dict.fromkeys(outcome_id(o) for o in self.outcomes))

    def schema(self, section: list[Sentence]) -> dict[str, Any]:
        """The step's reply schema (llama.cpp's ``json_object`` dialect): one object per
        sentence of ``section``, each field an enumeration."""
        props: dict[str, Any] = {}
        for s in section:
            step: dict[str, Any] = {
                "role": {"enum": list(ROLES)},
                "after": {"enum": self.earlier(s.number)},
                "when": {"enum": list(WHEN)},
            }
            if self.outcomes:
                step["outcome"] = {"enum": [NONE, *self.outcome_ids]}
            if self.catalog:
                step["data"] = {"enum": [NONE, *self.catalog]}
            props[f"s{s.number}"] = {"type": "object", "properties": step,
                                     "required": list(step), "additionalProperties": False}  # fmt: skip
        steps = {"type": "object", "properties": props, "required": list(props),
                 "additionalProperties": False}  # fmt: skip
        return {"type": "json_object", "schema": {
            "type": "object", "properties": {"steps": steps}, "required": ["steps"]}}  # fmt: skip

    def render_section(self, section: list[Sentence]) -> str:
        return "\n".join(f"s{s.number}: {s.text}" for s in section)

    def render_targets(self) -> str:
        """The steps before, as the model sees them: id and text."""
        lines = [f"{i}: {_short(self.doc.sentence(n).text)}" for n, i in self.ids.items()]
        return "\n".join(lines)


def _short(text: str, width: int = 90) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def clean_answer(raw: Any, section: list[Sentence], plan: Plan) -> dict[int, dict[str, str]]:
    """A step's answer as ``sentence number -> fields``, dropping what the schema would not
    allow (a reply from a model not held to the schema may hold anything)."""
    steps = raw.get("steps", raw) if isinstance(raw, dict) else {}
    out: dict[int, dict[str, str]] = {}
    for s in section:
        got = steps.get(f"s{s.number}") if isinstance(steps, dict) else None
        got = got if isinstance(got, dict) else {}

        def pick(key: str, allowed: list[str], default: str, got: dict = got) -> str:
            value = got.get(key)
            return value if value in allowed else default

        out[s.number] = {
            "role": pick("role", list(ROLES), "context"),
            "after": pick("after", plan.earlier(s.number), START),
            "when": pick("when", list(WHEN), "always"),
            "outcome": pick("outcome", plan.outcome_ids, NONE),
            "data": pick("data", plan.catalog or [], NONE),
        }
    return out


def _parent(number: int, answers: dict[int, dict[str, str]], plan: Plan) -> tuple[str, str]:
    """The node a sentence follows and on which result: a context sentence passes its own."""
    by_id = {i: n for n, i in plan.ids.items()}
    step = answers[number]
    after, when = step["after"], step["when"]
    seen = {number}
    while after != START:
        n = by_id[after]
        if n in seen or n not in answers:
            return START, when
        if answers[n]["role"] != "context":
            return after, when
        seen.add(n)
        after = answers[n]["after"]
    return START, when


def assemble(
    plan: Plan, answers: dict[int, dict[str, str]], sop_id: str | None = None
) -> tuple[dict[str, Any], list[int]]:
    """The SOP (as the mapping its YAML holds) from every sentence's answer, and the sentences
    answered ``context`` (unused)."""
    doc = plan.doc
    nodes: dict[str, Any] = {}
    params: dict[str, Any] = {}
    unused: list[int] = []
    entry: list[str] = []
    edges: list[tuple[str, str, str]] = []  # (parent, result, child)
    for number, step in sorted(answers.items()):
        s = doc.sentence(number)
        if s is None or step["role"] == "context":
            unused.append(number)
            continue
        nid = plan.ids[number]
        comps = plan.comparisons.get(number, [])
        params.update({c.name: c.value for c in comps})
        kind = "action" if step["role"] == "action" else ("constraint" if comps else "observation")
        # braces in the prose would read as placeholders; the swap keeps every offset
        text = s.text.replace("{", "(").replace("}", ")")
        node: dict[str, Any] = {"kind": kind, "text": with_placeholders(text, comps).strip()}
        if kind != "action" and step["data"] != NONE:
            node["data"] = [step["data"]]
        node["source"] = f"{s.cite} {s.text}"
        nodes[nid] = node
        parent, when = _parent(number, answers, plan)
        if parent == START:
            entry.append(nid)
        else:
            edges.append((parent, when, nid))
        for other in filter(None, step.get("joins", "").split(",")):  # the structural draft's
            other, _, result = other.partition(":")  # "id" or "id:no": on which result
            edges.append((other, result or "always", nid))
        if kind == "action" and step["outcome"] != NONE:
            edges.append((nid, "always", step["outcome"]))
    if plan.scope is not None:  # the opening statement observed first; the steps on its yes
        sid = sentence_id(plan.scope)
        edges = [*((sid, "yes", e) for e in entry), *edges]
        nodes = {sid: {"kind": "observation", "text": plan.scope.text,
                       "source": f"{plan.scope.cite} {plan.scope.text}"}, **nodes}  # fmt: skip
        entry = [sid]
    for o in plan.outcomes:
        oid = outcome_id(o)
        s = doc.sentence(o.sentence)
        cite = f"{s.cite} {s.text}" if s else f"(s{o.sentence})"
        if oid in nodes:
            nodes[oid]["source"] += f"; {cite}"
            continue
        nodes[oid] = {"kind": "action", "title": f"{o.field}: {o.value}",
                      "text": s.text if s else o.value, "source": cite}  # fmt: skip
    for parent, when, child in edges:
        node = nodes[parent]
        key = "true" if when == "yes" else "false" if when == "no" else "always"
        if node["kind"] == "action":
            key = "true"  # an action ends done (true); only a gated one is ever rejected
        targets = node.setdefault("next", {}).setdefault(key, [])
        if child not in targets:
            targets.append(child)
    for node in nodes.values():  # `next` after the text, before the source, as people write it
        if "next" in node:
            node["next"] = node.pop("next")
            node["source"] = node.pop("source")
    sop: dict[str, Any] = {
        "id": sop_id or slug(doc.title, "drafted_sop"),
        "title": doc.title,
        "version": 1,
        "description": f"Drafted by sopgraph draft from {doc.file}; review before publishing.",
    }
    if params:
        sop["params"] = params
    if inputs := _inputs(plan, nodes):
        sop["input"] = inputs
    sop["entry"] = {"default": entry}
    sop["nodes"] = nodes
    return sop, unused


_TYPES = ("string", "integer", "number", "boolean")


_INPUT_SECTION = re.compile(r"^(?:the\s+)?inputs?\b", re.I)
# a phrase that names a time ("when the customer asked", "the time of the report"): the input's
# time, which specs read as ``$timestamp``
_WHEN = re.compile(r"(?:when\b|(?:the\s+)?(?:time|date|moment)\b)", re.I)


def _inputs(plan: Plan, nodes: dict[str, Any]) -> dict[str, Any]:
    """The run's input, each field required: the arguments the data the decisions read
    requires (every ``customer_service`` tool takes ``case_id``); and each column of a hinted
    table that a phrase of the document's "Input" section names ("The order's id, the order's
    region and ..." -> ``order_id``, ``region``)."""
    out: dict[str, Any] = {}
    hinted = list(dict.fromkeys(d for n in nodes.values() for d in n.get("data", [])))
    for name in hinted:
        for arg, schema in (plan.about.get(name) or CatalogEntry()).arguments.items():
            kind = schema.get("type") if schema.get("type") in _TYPES else "string"
            said = " ".join(str(schema.get("description") or "").split())
            out.setdefault(arg, {"type": kind, "required": True,
                                 "description": said or f"what {name} reads"})  # fmt: skip
    tables = {".".join(h.split(".")[:2]) for h in hinted if h.count(".") >= 1}
    columns = [c for c in plan.catalog or [] if c.count(".") == 2 and c.rsplit(".", 1)[0] in tables]
    said = [t.text for sec in plan.doc.sections if _INPUT_SECTION.match(sec.title)
            for t in sec.sentences]  # fmt: skip
    for phrase in (p for text in said for p in re.split(r",|;|\band\b", text)):
        words, about = stems(phrase), " ".join(phrase.split()).rstrip(".")
        for column in columns:
            field = column.rsplit(".", 1)[1]
            if words and identifier_stems(field) <= words:
                out.setdefault(field, {"type": "string", "required": True, "description": about})
        if _WHEN.match(phrase.strip()) and "timestamp" not in out:  # the run's time: $timestamp
            out["timestamp"] = {"type": "datetime", "required": True, "description": about}
    return out


def to_yaml(sop: dict[str, Any]) -> str:
    return yaml.safe_dump(sop, sort_keys=False, width=100, allow_unicode=True)
