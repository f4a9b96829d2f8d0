"""Draw an SOP as a Mermaid flowchart, a Graphviz DOT graph, a PNG, or an SVG that needs no
Graphviz (``svg_layout.py``), optionally with a run's path.

Every format comes from one scene (nodes with shapes and classes, labelled edges), so a
Mermaid drawing, an SVG and a PNG of the same run always agree.

Example:
    >>> print(to_mermaid(load_sop("examples/dock/sop.yaml"), path=result.path, verdicts=result.verdicts))
"""

from __future__ import annotations

import re
import shutil
import subprocess
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sopgraph.graphs.model import EDGE_KEYS, Node, Sop, Verdict

# Words Mermaid's flowchart grammar reserves; a node named like one breaks the chart.
_MERMAID_RESERVED = {"end", "graph", "subgraph", "flowchart", "style", "class", "classdef",
                     "click", "linkstyle", "direction", "default"}  # fmt: skip
_MARK = {"true": "✔ true", "false": "✘ false", "no_data": "? no_data"}


class DrawingError(Exception):
    """A drawing the user asked for cannot be made (Graphviz missing or failing)."""


@dataclass
class _Box:
    key: str  # SOP node id, or "entry:<type>" for a start node
    kind: str  # observation | root_cause | constraint | action | entry | missing
    lines: list[str]
    classes: list[str] = field(default_factory=list)


@dataclass
class _Arrow:
    src: str
    dst: str
    label: str
    style: str = "solid"  # solid | dashed (on_error) | dotted (natural-language condition)
    taken: bool = False


@dataclass
class _Scene:
    title: str
    boxes: dict[str, _Box]
    arrows: list[_Arrow]


def _verdict_value(v: Any) -> str | None:
    if isinstance(v, Verdict):
        return v.value
    if isinstance(v, dict):
        return v.get("value")
    return v if isinstance(v, str) else None


def _short(text: str, width: int) -> str:
    return textwrap.shorten(" ".join(text.split()), width=width, placeholder="…")


def _edge_labels(node: Node) -> list[tuple[str, str, str]]:
    """``(label, child, style)`` for every edge of ``node``, in file order."""
    out: list[tuple[str, str, str]] = []
    for key in EDGE_KEYS:
        label = key
        if node.is_action and key in ("true", "false"):
            label = {"true": "approved" if node.approval == "required" else "done",
                     "false": "rejected"}[key]  # fmt: skip
        style = "dashed" if key == "on_error" else "solid"
        out += [(label, child, style) for child in getattr(node.next, key)]
    for cond in node.next.when:
        if isinstance(cond.if_, str):
            out += [(_short(cond.if_, 40), child, "dotted") for child in cond.then]
        else:
            p = cond.if_
            value = "" if p.op == "exists" else f" {p.value!r}"
            out += [(_short(f"{p.var} {p.op}{value}", 40), child, "solid") for child in cond.then]
    return out


def _fires(node: Node, label: str, verdict: str | None) -> bool:
    """Whether an edge of ``node`` with this label can have fired on ``verdict``."""
    if verdict is None or label in ("always", "on_error"):
        return True
    plain = {"done": "true", "approved": "true", "rejected": "false"}.get(label, label)
    if plain in ("true", "false", "no_data"):
        return plain == verdict
    return True  # a condition: the path itself shows whether it held


def _scene(
    sop: Sop,
    path: list[str] | None,
    verdicts: dict[str, Any] | None,
    params: dict[str, Any] | None = None,
    around_path: bool = False,
) -> _Scene:
    verdicts = verdicts or {}
    taken = list(path or [])
    first = {nid: i for i, nid in reversed(list(enumerate(taken)))}
    last = {nid: i for i, nid in enumerate(taken)}
    boxes: dict[str, _Box] = {}
    arrows: list[_Arrow] = []
    for kind, targets in sop.entry.items():
        key = f"entry:{kind}"
        boxes[key] = _Box(key, "entry", [kind], ["entry"])
        arrows += [_Arrow(key, t, "", taken=t in first) for t in targets]
    for node in sop.nodes.values():
        lines = [node.id]
        if node.text:
            lines.append(_short(sop.render_text(node, params), 60 if not around_path else 110))
        classes = [node.kind]
        if node.is_action:
            flags = [f"cost: {node.cost}"] if node.cost != "low" else []
            flags += ["needs approval"] if node.approval == "required" else []
            if flags:
                lines.append("⚠ " + ", ".join(flags))
            classes += ["gated"] if node.approval == "required" else []
            classes += ["costly"] if node.cost == "high" else []
        if node.max_visits is not None:
            lines.append(f"↻ at most {node.max_visits}×")
        value = _verdict_value(verdicts.get(node.id))
        if value is not None:
            lines.append(_MARK.get(value, value))
        if path is not None:
            classes.append("taken" if node.id in first else "skipped")
        boxes[node.id] = _Box(node.id, node.kind, lines, classes)
        for label, child, style in _edge_labels(node):
            hit = (
                node.id in first
                and child in last
                and last[child] > first[node.id]
                # a node seen once fired on its one verdict; in a loop, any of its verdicts
                and (taken.count(node.id) > 1 or _fires(node, label, value))
            )
            arrows.append(_Arrow(node.id, child, label, style, hit))
    for a in arrows:
        if a.dst not in boxes:  # drawn even when unvalidated, so the mistake is visible
            boxes[a.dst] = _Box(a.dst, "missing", [a.dst, "(no such node)"], ["missing"])
    scene = _Scene(sop.title or sop.id, boxes, arrows)
    return _around(scene, set(first)) if around_path and path else scene


def _around(scene: _Scene, taken: set[str]) -> _Scene:
    """Only the path, the entries that started it, and the branches it did not take (one step
    away, as bare ids): a run's story at a readable size instead of the whole SOP."""
    keep = set(taken)
    arrows: list[_Arrow] = []
    for a in scene.arrows:
        if a.src in taken or (a.src.startswith("entry:") and a.dst in taken):
            keep |= {a.src, a.dst}
            arrows.append(a)
    boxes = {}
    for key, box in scene.boxes.items():
        if key not in keep:
            continue
        if key not in taken and box.kind != "entry":  # a branch not taken: its id is enough
            box = _Box(key, box.kind, [key], box.classes)
        boxes[key] = box
    return _Scene(scene.title, boxes, arrows)


# -- Mermaid ---------------------------------------------------------------------------------

_MERMAID_SHAPES = {
    "observation": ('{"', '"}'),
    "root_cause": ('("', '")'),
    "constraint": ('{{"', '"}}'),
    "action": ('["', '"]'),
    "entry": ('(["', '"])'),
    "missing": ('["', '"]'),
}
_MERMAID_CLASSES = {
    "entry": "fill:#e8f0fe,stroke:#4a6fa5",
    "observation": "fill:#fff8e1,stroke:#b08900",
    "root_cause": "fill:#fdecea,stroke:#b23c17",
    "constraint": "fill:#ede7f6,stroke:#5e35b1",
    "action": "fill:#e8f5e9,stroke:#2e7d32",
    "gated": "stroke:#c62828,stroke-width:3px",
    "costly": "stroke-dasharray:5 3",
    "missing": "fill:#ffffff,stroke:#c62828,stroke-dasharray:2 2",
    "taken": "stroke:#1565c0,stroke-width:4px",
    "skipped": "opacity:0.45",
}


def _mermaid_ids(keys: list[str]) -> dict[str, str]:
    """Mermaid-safe ids; SOP nodes keep their own id when they can, start nodes yield."""
    ids: dict[str, str] = {}
    used: set[str] = set()
    for key in sorted(keys, key=lambda k: k.startswith("entry:")):
        raw = "start_" + key.removeprefix("entry:") if key.startswith("entry:") else key
        base = re.sub(r"[^A-Za-z0-9_]", "_", raw)
        if base.lower() in _MERMAID_RESERVED or not base[:1].isalpha():
            base = f"n_{base}"
        mid, i = base, 2
        while mid in used:
            mid, i = f"{base}_{i}", i + 1
        used.add(mid)
        ids[key] = mid
    return ids


def _mermaid_text(text: str) -> str:
    """Text safe inside a quoted Mermaid label: entity codes for the characters it parses."""
    for ch, code in (("#", "#35;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;"),
                     ("|", "#124;"), ("`", "#96;")):  # fmt: skip
        text = text.replace(ch, code)
    return text


def to_mermaid(
    sop: Sop,
    path: list[str] | None = None,
    verdicts: dict[str, Any] | None = None,
    *,
    params: dict[str, Any] | None = None,
    around_path: bool = False,
) -> str:
    """The SOP as a Mermaid flowchart; with ``path``, the nodes and edges a run took stand out.

    ``verdicts`` maps node ids to a ``Verdict`` (or its dict) and adds each verdict to its node.
    ``params`` fills node texts (a site's parameters; the SOP's defaults otherwise).
    ``around_path`` draws only the path and the branches it did not take.
    """
    scene = _scene(sop, path, verdicts, params, around_path)
    ids = _mermaid_ids(list(scene.boxes))
    title = scene.title.replace('"', "'")  # the title sits in YAML front matter, not a label
    out = ["---", f'title: "{title}"', "---", "flowchart TD"]
    for key, box in scene.boxes.items():
        left, right = _MERMAID_SHAPES[box.kind]
        label = "<br/>".join(
            f"<b>{_mermaid_text(line)}</b>"
            if i == 0 and box.kind != "entry"
            else _mermaid_text(line)
            for i, line in enumerate(box.lines)
        )
        out.append(f"    {ids[key]}{left}{label}{right}")
    arrow = {"solid": "-->", "dashed": "-.->", "dotted": "-.->"}
    taken_links: list[int] = []
    for i, a in enumerate(scene.arrows):
        label = f'|"{_mermaid_text(a.label)}"|' if a.label else ""
        out.append(f"    {ids[a.src]} {arrow[a.style]}{label} {ids[a.dst]}")
        if a.taken and path is not None:
            taken_links.append(i)
    used = {c for box in scene.boxes.values() for c in box.classes}
    for name, style in _MERMAID_CLASSES.items():
        if name in used:
            out.append(f"    classDef {name} {style}")
    for name in _MERMAID_CLASSES:
        members = [ids[k] for k, box in scene.boxes.items() if name in box.classes]
        if members:
            out.append(f"    class {','.join(members)} {name}")
    if taken_links:
        out.append(
            f"    linkStyle {','.join(map(str, taken_links))} stroke:#1565c0,stroke-width:3px"
        )
    return "\n".join(out) + "\n"


def to_svg(
    sop: Sop,
    path: list[str] | None = None,
    verdicts: dict[str, Any] | None = None,
    *,
    params: dict[str, Any] | None = None,
    around_path: bool = False,
) -> str:
    """The SOP as an SVG drawn in pure Python (no Graphviz), styled like :func:`to_dot` (same
    options); the boxes on ``path`` are filled by their verdict."""
    from sopgraph.graphs.svg_layout import scene_svg

    scene = _scene(sop, path, verdicts, params, around_path)
    values = {k: v for k, v in ((k, _verdict_value(v)) for k, v in (verdicts or {}).items()) if v}
    return scene_svg(scene, values, run=path is not None)


# -- Graphviz --------------------------------------------------------------------------------

_DOT_SHAPES = {
    "observation": 'shape=diamond, style=filled, fillcolor="#fff8e1", color="#b08900"',
    "root_cause": 'shape=box, style="rounded,filled", fillcolor="#fdecea", color="#b23c17"',
    "constraint": 'shape=hexagon, style=filled, fillcolor="#ede7f6", color="#5e35b1"',
    "action": 'shape=box, style=filled, fillcolor="#e8f5e9", color="#2e7d32"',
    "entry": 'shape=oval, style=filled, fillcolor="#e8f0fe", color="#4a6fa5"',
    "missing": 'shape=box, style=dashed, color="#c62828"',
}


def _dot_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(
    sop: Sop,
    path: list[str] | None = None,
    verdicts: dict[str, Any] | None = None,
    *,
    params: dict[str, Any] | None = None,
    around_path: bool = False,
) -> str:
    """The SOP as a Graphviz DOT digraph, styled like :func:`to_mermaid` (same options)."""
    scene = _scene(sop, path, verdicts, params, around_path)
    out = [
        f"digraph {_dot_str(sop.id)} {{",
        f"    label={_dot_str(scene.title)}; labelloc=t; rankdir=TB;",
        '    node [fontname="Helvetica", fontsize=10]; edge [fontname="Helvetica", fontsize=9];',
    ]
    if around_path:  # a run's drawing is read at its natural size: keep it compact
        out.append('    nodesep=0.2; ranksep=0.3; node [margin="0.06,0.03"];')
    for key, box in scene.boxes.items():
        wrapped = [box.lines[0]] + [w for line in box.lines[1:] for w in textwrap.wrap(line, 28)]
        label = _dot_str("\n".join(wrapped)).replace("\n", "\\n")  # dot's line break
        attrs = [f"label={label}", _DOT_SHAPES[box.kind]]
        if "gated" in box.classes:
            attrs.append("peripheries=2, penwidth=2")
        if "costly" in box.classes:
            attrs.append('fontcolor="#c62828"')
        if "taken" in box.classes:
            attrs.append('penwidth=3, color="#1565c0"')
        if "skipped" in box.classes:
            attrs.append('fontcolor="#9e9e9e", color="#bdbdbd"')
        out.append(f"    {_dot_str(key)} [{', '.join(attrs)}];")
    for a in scene.arrows:
        attrs = [f"label={_dot_str(a.label)}"] if a.label else []
        if a.style != "solid":
            attrs.append(f"style={a.style}")
        if a.taken and path is not None:
            attrs.append('color="#1565c0", penwidth=2.5')
        out.append(f"    {_dot_str(a.src)} -> {_dot_str(a.dst)} [{', '.join(attrs)}];")
    out.append("}")
    return "\n".join(out) + "\n"


def render_png(
    sop: Sop,
    out_path: str | Path,
    path: list[str] | None = None,
    verdicts: dict[str, Any] | None = None,
) -> Path:
    """Write the SOP drawing as a PNG with Graphviz ``dot``; raises DrawingError if it cannot."""
    dot = shutil.which("dot")
    if dot is None:
        raise DrawingError(
            "Graphviz 'dot' is not installed: install it (apt-get install graphviz, "
            "brew install graphviz) or draw with --format mermaid"
        )
    out = Path(out_path)
    try:
        done = subprocess.run(
            [dot, "-Tpng", "-o", str(out)],
            input=to_dot(sop, path, verdicts).encode(),
            capture_output=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        raise DrawingError("Graphviz 'dot' took over 120 s; draw with --format mermaid") from None
    if done.returncode != 0:
        why = (done.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[0]
        raise DrawingError(f"Graphviz 'dot' failed writing {out}: {why}")
    return out
