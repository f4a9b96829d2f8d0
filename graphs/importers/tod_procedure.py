"""Condition-action procedures (TOD-ProcBench's If-Then documents) as SOP graphs, both ways.

A procedure is a list of sections; a section is a list of steps read top-down: an action, an
``If <condition>:`` whose body runs when the condition holds, a ``Go to <node id>`` (a join
or a loop) or ``Stop`` (the branch ends). The three text formats (``tod_formats.py``) all
parse to this tree and render from it.

The graph (``to_sop``): an action is an ``action`` node whose ``always`` edge goes to the next
step; an If is a decision node whose ``true`` edge enters its body and whose ``false`` edge
goes to the next step, and the body's last step continues there too (the paper's reading:
evaluate each condition in order, do the actions of those that hold). A condition on the
conversation ("the customer asks about the return policy") is a free-text ``observation``,
decided by the judge; a condition on data ("the membership level is gold") is a
``constraint`` with ``data`` hints, decided by a compiled tool (``classify_condition``).

Node fields that plain text cannot carry (id, kind, data, tool, api, source, or a ``next`` the
steps cannot express) ride in an annotation at the end of the step, `` {{json}}``, so every
SOP round-trips; a document without annotations gets ids from its text.

Example:
    >>> proc = Procedure(sections=[[Step("if", "the membership level is gold",
    ...     body=[Step("action", "offer a refund")])]])
    >>> sorted(to_sop(proc).nodes)
    ['membership_level_is_gold', 'offer_refund']
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from sopgraph.graphs.loader import Problem, SopError
from sopgraph.graphs.model import Next, Node, Sop

StepKind = Literal["action", "if", "goto", "stop"]
GOTO = "Go to "
STOP = "Stop"
ALL_CASES = "In all cases"
_OPEN = " {{"
# Node fields an annotation may carry besides id, kind and next.
_FIELDS = ("title", "data", "api", "tool", "cost", "approval", "max_visits", "source")
# Sop fields the document header carries.
_SOP_FIELDS = ("id", "version", "description", "params", "params_by", "input", "entry")

# Phrases that make a condition a data condition, and the data each one reads (ABCD's scenario).
DATA_PHRASES: dict[str, str] = {
    "membership level": "customer.member_level",
    "member level": "customer.member_level",
    "gold member": "customer.member_level",
    "silver member": "customer.member_level",
    "bronze member": "customer.member_level",
    "guest member": "customer.member_level",
    "purchase date": "order.purchase_date",
    "purchased within": "order.purchase_date",
    "original packaging": "order.packaging",
    "oracle": "system.oracle",
}


@dataclass
class Step:
    """One step of a procedure: its kind, its text (a goto's target id) and its annotation."""

    kind: StepKind
    text: str = ""
    body: list[Step] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Procedure:
    """A document: its header (the SOP's own fields, ``title``) and its sections."""

    sections: list[list[Step]]
    title: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


def classify_condition(text: str) -> list[str]:
    """The data a condition reads (empty: a condition on the conversation, for the judge)."""
    low = text.lower()
    return list(dict.fromkeys(hint for phrase, hint in DATA_PHRASES.items() if phrase in low))


# --- annotations -------------------------------------------------------------------------


def split_annotation(text: str, where: str) -> tuple[str, dict[str, Any]]:
    """``"text {{json}}"`` -> ``("text", {...})``; text without an annotation -> ``(text, {})``."""
    text = " " + text  # an annotation may open the line (an untitled header, an empty text)
    i = text.find(_OPEN)
    if i < 0:
        return text.strip(), {}
    try:
        meta, end = json.JSONDecoder().raw_decode(text, i + len(_OPEN) - 1)
    except json.JSONDecodeError as exc:
        raise _error(
            where, f"the annotation is not JSON ({exc.msg}); write `text {{{{...}}}}`"
        ) from None
    if not isinstance(meta, dict) or text[end:].strip() != "}":
        raise _error(where, "an annotation is one JSON object closed by '}}' at the line's end")
    return text[:i].strip(), meta


def annotate(text: str, meta: dict[str, Any]) -> str:
    if not meta:
        return text
    body = json.dumps(meta, ensure_ascii=False, separators=(", ", ": "))
    return f"{text} {{{body}}}".strip()


def split_conjuncts(text: str, where: str) -> list[str]:
    """``"a AND b {{..}} AND c"`` -> the three conditions, never splitting inside an annotation."""
    parts: list[str] = []
    start = i = 0
    while True:
        nxt_and = text.find(" AND ", i)
        nxt_ann = text.find(_OPEN, i)
        if nxt_ann >= 0 and (nxt_and < 0 or nxt_ann < nxt_and):
            try:
                _, end = json.JSONDecoder().raw_decode(text, nxt_ann + len(_OPEN) - 1)
            except json.JSONDecodeError as exc:
                raise _error(where, f"the annotation is not JSON ({exc.msg})") from None
            i = end + 1
            continue
        if nxt_and < 0:
            parts.append(text[start:].strip())
            return [p for p in parts if p]
        parts.append(text[start:nxt_and].strip())
        start = i = nxt_and + len(" AND ")


def _safe(text: str) -> bool:
    """Text a line can show as it is: the parsers would read it back unchanged."""
    low = text.lower()
    return (
        text == text.strip()
        and "\n" not in text
        and text.isprintable()
        and " AND " not in text
        and _OPEN.strip() not in text
        and not text.endswith((":", "}"))
        and not low.startswith(("if ", "go to ", "stop", "in all cases", "- "))
        and not text.startswith("#")
        and text != "---"
    )


def _shown(text: str) -> str:
    shown = " ".join(text.split()).replace(" AND ", " and ").replace("{{", "{ {")
    return shown.rstrip(":}").removeprefix("- ")


# --- text ids ----------------------------------------------------------------------------


def slug(text: str, taken: set[str]) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower())
    words = [w for w in words if w not in {"the", "a", "an", "if", "of", "to", "and", "is"}]
    base = "_".join(words[:6]) or "step"
    nid, n = base, 2
    while nid in taken:
        nid, n = f"{base}_{n}", n + 1
    taken.add(nid)
    return nid


# --- procedure -> SOP --------------------------------------------------------------------


def to_sop(proc: Procedure, where: str = "<procedure>") -> Sop:
    """Compile a procedure into an SOP (ids from annotations, else from the text).

    Raises:
        SopError: a goto to no node, a duplicate id, or an empty document.
    """
    if not any(proc.sections):
        raise _error(where, "the document has no steps; write at least one action or If")
    nodes: dict[str, Node] = {}
    taken: set[str] = {s.meta["id"] for s in _walk(proc.sections) if "id" in s.meta}
    ids: dict[int, str] = {}
    for step in _walk(proc.sections):
        if step.kind in ("action", "if"):
            ids[id(step)] = step.meta.get("id") or slug(step.meta.get("text", step.text), taken)
    gotos: list[str] = []

    def first(steps: list[Step], cont: str | None) -> str | None:
        if not steps:
            return cont
        head = steps[0]
        if head.kind == "stop":
            return None
        if head.kind == "goto":
            gotos.append(head.text)
            return head.text
        return ids[id(head)]

    def block(steps: list[Step], cont: str | None) -> None:
        for i, step in enumerate(steps):
            rest = steps[i + 1 :]
            if step.kind in ("goto", "stop"):
                if rest:
                    raise _error(where, f"'{_label(step)}' ends its block; nothing may follow it")
                continue
            nid = ids[id(step)]
            if nid in nodes:
                raise _error(where, f"two steps have the id '{nid}'; ids are unique")
            after = first(rest, cont)
            node = _node(step, nid)
            if "next" in step.meta:  # a next the steps cannot express, kept as written
                if step.body or rest:
                    raise _error(where, f"'{nid}' has its own next; no step may follow it")
                node.next = Next.model_validate(step.meta["next"])
            elif step.kind == "action":
                node.next = Next(always=[after] if after else [])
            else:
                inner = first(step.body, after)
                node.next = Next(true=[inner] if inner else [], false=[after] if after else [])
            nodes[nid] = node
            if step.kind == "if":
                block(step.body, after)
            if "next" in step.meta:
                return

    roots = [first(section, None) for section in proc.sections if section]
    for section in proc.sections:
        block(section, None)
    for target in gotos:
        if target not in nodes:
            raise _error(where, f"'Go to {target}' names no step; use a step's id")
    meta = {k: v for k, v in proc.meta.items() if k in _SOP_FIELDS}
    entry = meta.pop("entry", None) or {"default": [roots[0]]}
    sop_id = meta.pop("id", None) or slug(proc.title or "procedure", set())
    try:
        return Sop(id=sop_id, title=proc.title, entry=entry, nodes=nodes, **meta)
    except ValueError as exc:
        raise _error(where, f"the header does not make an SOP: {exc}") from None


def _node(step: Step, nid: str) -> Node:
    meta = step.meta
    text = meta.get("text", step.text)
    fields = {k: meta[k] for k in _FIELDS if k in meta}
    if step.kind == "action":
        kind = meta.get("kind", "action")
    else:
        hints = classify_condition(text) if "data" not in meta else []
        if hints:
            fields["data"] = hints
        kind = meta.get("kind", "constraint" if fields.get("data") else "observation")
    return Node(id=nid, kind=kind, text=text, **fields)


def _walk(sections: list[list[Step]]):
    for section in sections:
        stack = list(reversed(section))
        while stack:
            step = stack.pop()
            yield step
            stack.extend(reversed(step.body))


def _label(step: Step) -> str:
    return f"{GOTO}{step.text}" if step.kind == "goto" else STOP


# --- SOP -> procedure --------------------------------------------------------------------


def from_sop(sop: Sop) -> Procedure:
    """The steps of ``sop``: each node once, joins and loops as ``Go to``.

    Nodes whose edges the steps cannot express (several children, ``no_data``, ``when``) keep
    their ``next`` in the annotation; their children start new sections.
    """
    done: set[str] = set()
    sections: list[list[Step]] = []
    queue: list[str] = []

    def chain(nid: str | None, cont: str | None) -> list[Step]:
        out: list[Step] = []
        while nid is not None and nid != cont:
            if nid in done or nid not in sop.nodes:
                out.append(Step("goto", nid))
                return out
            done.add(nid)
            node = sop.nodes[nid]
            step = _step(node)
            out.append(step)
            if not _canonical(node):
                step.meta["next"] = node.next.model_dump(by_alias=True, exclude_defaults=True)
                queue.extend(node.next.children())
                return out
            if node.is_action:
                nid = (node.next.always or [None])[0]
            else:
                after = (node.next.false or [None])[0]
                step.body = chain((node.next.true or [None])[0], after)
                nid = after
        if nid is None and cont is not None:
            out.append(Step("stop"))
        return out

    roots = [n for targets in sop.entry.values() for n in targets]
    for root in [*roots, *sop.nodes]:
        queue.append(root)
        while queue:
            nid = queue.pop(0)
            if nid not in done and nid in sop.nodes:
                sections.append(chain(nid, None))
    meta: dict[str, Any] = {"id": sop.id}
    if sop.version != 1:
        meta["version"] = sop.version
    for key in ("description", "params", "params_by"):
        if getattr(sop, key):
            meta[key] = getattr(sop, key)
    if sop.input:
        meta["input"] = {k: v.model_dump(exclude_defaults=True) for k, v in sop.input.items()}
    if sop.entry != {"default": [roots[0] if roots else ""]}:
        meta["entry"] = sop.entry
    return Procedure(sections=sections, title=sop.title, meta=meta)


def _canonical(node: Node) -> bool:
    nxt = node.next
    if nxt.when or nxt.no_data or nxt.on_error:
        return False
    if node.is_action:
        return not nxt.true and not nxt.false and len(nxt.always) <= 1
    return not nxt.always and len(nxt.true) <= 1 and len(nxt.false) <= 1


def _step(node: Node) -> Step:
    meta: dict[str, Any] = {"id": node.id}
    kind: StepKind = "action" if node.is_action else "if"
    default_kind = "action"
    if not node.is_action:
        if node.data != classify_condition(node.text):  # else the importer reads them from text
            meta["data"] = node.data
        default_kind = "constraint" if meta.get("data", node.data) else "observation"
    if node.kind != default_kind:
        meta["kind"] = node.kind
    for key in _FIELDS:
        if key == "data" and not node.is_action:
            continue
        value = getattr(node, key)
        if value != Node.model_fields[key].default and value not in ([], None):
            meta[key] = value.model_dump(exclude_defaults=True) if key == "api" else value
    if slug(node.text, set()) == node.id:  # the importer names it so from its text
        del meta["id"]
    if not _safe(node.text):
        meta["text"] = node.text
        return Step(kind, _shown(node.text), meta=meta)
    return Step(kind, node.text, meta=meta)


def _error(where: str, message: str) -> SopError:
    return SopError([Problem(where, 1, "", message)])
