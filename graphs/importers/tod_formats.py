"""TOD-ProcBench's three instruction formats (paper 002, appendix B), read and written.

- ``tod_nested`` (f1, nested If-Then): bullets, an ``If <condition>:`` bullet holding its
  body one level deeper; a top-level ``If ...:`` line may go without a bullet, as the paper
  writes the intent's condition.
- ``tod_flat`` (f2, flattened If-Then): ``If c1 AND c2:`` (or ``In all cases:``) lines, each
  followed by its indented ``- action`` lines, read top-down.
- ``tod_json`` (f3): ``{"what_to_do": [{"conditions": [...], "actions": [...]}, ...]}`` (a bare
  list, or the paper's capitalised keys, are read too).

Flattening follows the paper: each action is listed under the conjunction of the conditions
above it, neighbours with the same conditions merged; reading back, a condition list that
extends the open one nests under it. Sections (rare: SOPs whose nodes the steps cannot hold
in one piece) are separated by a ``---`` line, or by a ``"section"`` key in JSON. The header
line ``# title {{...}}`` (JSON: ``"intent"`` and ``"sopgraph"``) carries the SOP's own fields.

Example:
    >>> sop = import_tod("tod_flat", "If the customer wants a refund:\\n    - offer a refund\\n")
    >>> export_tod("tod_json", sop).splitlines()[3]
    '      "conditions": ['
"""

from __future__ import annotations

import json
import re
from typing import Any

from sopgraph.graphs.importers.tod_procedure import (
    ALL_CASES,
    GOTO,
    STOP,
    Procedure,
    Step,
    _error,
    annotate,
    from_sop,
    split_annotation,
    split_conjuncts,
    to_sop,
)
from sopgraph.graphs.model import Sop

FORMATS = ("tod_nested", "tod_flat", "tod_json")
_TAG = re.compile(r"^\s*</?What_to_do>\s*$", re.IGNORECASE)
_BULLET = re.compile(r"^(\s*)[-*•]\s+(.*)$")
_INLINE_IF = re.compile(r"^If\s+([^,:]+),\s+(.+)$", re.IGNORECASE)
_IF = re.compile(r"^If\s+(.*):$", re.IGNORECASE | re.DOTALL)


def import_tod(kind: str, text: str, file: str = "<text>") -> Sop:
    """Read a document in format ``kind`` (one of ``FORMATS``) as an SOP.

    Raises:
        SopError: the text is not in the format, or its steps do not make an SOP.
    """
    reader = {"tod_nested": parse_nested, "tod_flat": parse_flat, "tod_json": parse_json}[kind]
    return to_sop(reader(text, file), file)


def export_tod(kind: str, sop: Sop) -> str:
    """Write ``sop`` in format ``kind``; ``import_tod(kind, ...)`` reads back the same SOP."""
    writer = {"tod_nested": render_nested, "tod_flat": render_flat, "tod_json": render_json}[kind]
    return writer(from_sop(sop))


# --- steps as lines --------------------------------------------------------------------


def _item(text: str, where: str) -> Step:
    """A bullet's or an action list's entry: an action, ``Go to X`` or ``Stop``."""
    shown, meta = split_annotation(text, where)
    if shown.lower().startswith(GOTO.lower()) and not meta:
        return Step("goto", shown[len(GOTO) :].strip())
    if shown.rstrip(".").lower() == STOP.lower() and not meta:
        return Step("stop")
    inline = _INLINE_IF.match(shown)
    if inline and not meta:  # the paper's "If delivered, start return process ..."
        return Step("if", inline.group(1), body=[Step("action", inline.group(2))])
    return Step("action", shown, meta=meta)


def _item_text(step: Step) -> str:
    if step.kind == "goto":
        return f"{GOTO}{step.text}"
    if step.kind == "stop":
        return STOP
    return annotate(step.text, step.meta)


def _condition(text: str, where: str) -> Step:
    shown, meta = split_annotation(text, where)
    return Step("if", shown.rstrip(":").strip(), meta=meta)


def _header(lines: list[str], where: str) -> tuple[str, dict[str, Any], list[str]]:
    body = [ln.rstrip() for ln in lines if not _TAG.match(ln)]
    while body and not body[0].strip():
        body.pop(0)
    if body and body[0].startswith("# "):
        title, meta = split_annotation(body[0][2:], where)
        return title, meta, body[1:]
    return "", {}, body


def _header_line(proc: Procedure) -> str:
    return "# " + annotate(proc.title, proc.meta)


def _sections(lines: list[str]) -> list[list[tuple[int, str]]]:
    out: list[list[tuple[int, str]]] = [[]]
    for n, line in enumerate(lines, start=2):
        if line.strip() == "---":
            out.append([])
        elif line.strip():
            out[-1].append((n, line))
    return [s for s in out if s]


# --- f1: nested If-Then ----------------------------------------------------------------


def parse_nested(text: str, file: str = "<text>") -> Procedure:
    title, meta, lines = _header(text.splitlines(), file)
    sections: list[list[Step]] = []
    for section in _sections(lines):
        root: list[Step] = []
        # (indent, body) pairs: a step at indent i goes into the deepest body opened above i
        stack: list[tuple[int, list[Step]]] = [(-2, root)]
        for n, line in section:
            where = f"{file}:{n}"
            m = _BULLET.match(line)
            if m:
                indent, content = len(m.group(1).expandtabs(4)), m.group(2).strip()
            elif _IF.match(line.strip()) and not line[:1].isspace():
                indent, content = -1, line.strip()  # the paper's unbulleted intent condition
            else:
                raise _error(where, "expected a '- ' bullet or a top-level 'If ...:' line")
            while stack[-1][0] >= indent:
                stack.pop()
            body = stack[-1][1]
            if body and body[-1].kind in ("goto", "stop"):
                raise _error(where, f"nothing may follow '{_item_text(body[-1])}' in its block")
            shown, meta_ = split_annotation(content, where)
            if shown.endswith(":") and shown.lower().startswith("if "):
                step = Step("if", shown[3:-1].strip(), meta=meta_)
                body.append(step)
                stack.append((indent, step.body))
            else:
                body.append(_item(content, where))
        sections.append(root)
    return Procedure(sections=sections, title=title, meta=meta)


def render_nested(proc: Procedure) -> str:
    out = [_header_line(proc)]

    def block(steps: list[Step], depth: int) -> None:
        pad = "  " * depth
        for step in steps:
            if step.kind == "if":
                out.append(f"{pad}- If {step.text}:{_ann(step)}")
                block(step.body, depth + 1)
            else:
                out.append(f"{pad}- {_item_text(step)}")

    for i, section in enumerate(proc.sections):
        if i:
            out.append("---")
        block(section, 0)
    return "\n".join(out) + "\n"


def _ann(step: Step) -> str:
    return " " + annotate("", step.meta) if step.meta else ""


# --- f2 and f3: flattened --------------------------------------------------------------


def flatten(steps: list[Step]) -> list[tuple[list[Step], list[Step]]]:
    """(conditions, actions) pairs in reading order, neighbours with equal conditions merged."""
    out: list[tuple[list[Step], list[Step]]] = []

    def walk(block: list[Step], path: list[Step]) -> None:
        for step in block:
            if step.kind == "if":
                here = [*path, step]
                if not step.body:
                    out.append((here, []))
                walk(step.body, here)
            elif out and _same(out[-1][0], path):
                out[-1][1].append(step)
            else:
                out.append((path, [step]))

    walk(steps, [])
    return out


def _same(a: list[Step], b: list[Step]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def unflatten(entries: list[tuple[list[Step], list[Step]]]) -> list[Step]:
    """The nested steps of flattened entries: a condition list extending the open one nests."""
    root: list[Step] = []
    open_: list[Step] = []  # the Ifs the last entry was under, outermost first

    def key(step: Step) -> str:
        return annotate(step.text, step.meta)

    for conds, actions in entries:
        keep = 0
        while keep < len(open_) and keep < len(conds) and key(open_[keep]) == key(conds[keep]):
            keep += 1
        if keep == len(conds) == len(open_) and not actions:
            keep -= 1  # an empty entry repeating the open conditions: a new, empty If
        del open_[keep:]
        body = open_[-1].body if open_ else root
        for cond in conds[keep:]:
            step = Step("if", cond.text, meta=dict(cond.meta))
            body.append(step)
            open_.append(step)
            body = step.body
        body.extend(actions)
    return root


def parse_flat(text: str, file: str = "<text>") -> Procedure:
    title, meta, lines = _header(text.splitlines(), file)
    sections: list[list[Step]] = []
    for section in _sections(lines):
        entries: list[tuple[list[Step], list[Step]]] = []
        for n, line in section:
            where = f"{file}:{n}"
            stripped = line.strip()
            m = _BULLET.match(line)
            if m and line[:1].isspace():
                if not entries:
                    raise _error(where, "an action comes before any 'If ...:' line")
                entries[-1][1].append(_item(m.group(2).strip(), where))
            elif stripped.rstrip(":").lower() == ALL_CASES.lower():
                entries.append(([], []))
            elif stripped.lower().startswith("if ") and stripped.endswith(":"):
                conds = split_conjuncts(stripped[3:-1], where)
                entries.append(([_condition(c, where) for c in conds], []))
            else:
                raise _error(where, "expected 'If ... :', 'In all cases:' or an indented '- '")
        sections.append(unflatten(entries))
    return Procedure(sections=sections, title=title, meta=meta)


def render_flat(proc: Procedure) -> str:
    out = [_header_line(proc)]
    for i, section in enumerate(proc.sections):
        if i:
            out.append("---")
        for conds, actions in flatten(section):
            if conds:
                out.append("If " + " AND ".join(annotate(c.text, c.meta) for c in conds) + ":")
            else:
                out.append(f"{ALL_CASES}:")
            out += [f"    - {_item_text(a)}" for a in actions]
    return "\n".join(out) + "\n"


def parse_json(text: str, file: str = "<text>") -> Procedure:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _error(f"{file}:{exc.lineno}", f"not JSON: {exc.msg}") from None
    title, meta = "", {}
    if isinstance(data, dict):
        title = str(data.get("intent", ""))
        meta = data.get("sopgraph", {})
        data = data.get("what_to_do", data.get("What_to_do"))
    if not isinstance(data, list):
        raise _error(file, 'expected {"what_to_do": [{"conditions": [...], "actions": [...]}]}')
    by_section: dict[int, list[tuple[list[Step], list[Step]]]] = {}
    for i, entry in enumerate(data):
        where = f"{file}: entry {i + 1}"
        if not isinstance(entry, dict):
            raise _error(where, 'each entry is {"conditions": [...], "actions": [...]}')
        conds = entry.get("conditions", entry.get("Conditions", []))
        actions = entry.get("actions", entry.get("Actions", []))
        if not all(isinstance(x, str) for x in [*conds, *actions]):
            raise _error(where, "conditions and actions are lists of strings")
        by_section.setdefault(int(entry.get("section", 0)), []).append(
            ([_condition(c, where) for c in conds], [_item(a, where) for a in actions])
        )
    sections = [unflatten(by_section[k]) for k in sorted(by_section)]
    return Procedure(sections=sections, title=title, meta=meta)


def render_json(proc: Procedure) -> str:
    entries: list[dict[str, Any]] = []
    for i, section in enumerate(proc.sections):
        for conds, actions in flatten(section):
            entry: dict[str, Any] = {
                "conditions": [annotate(c.text, c.meta) for c in conds],
                "actions": [_item_text(a) for a in actions],
            }
            if i:
                entry["section"] = i
            entries.append(entry)
    doc = {"intent": proc.title, "sopgraph": proc.meta, "what_to_do": entries}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
