"""A drawing's scene laid out in layers and written as SVG in pure Python: the report's drawing
when Graphviz is not installed.

Each box goes one layer below the deepest box that leads to it (the edges that close a loop
are left out of that count and drawn curving back on the right); within a layer, boxes are
ordered by where their parents sit, to keep arrows from crossing. Boxes on a run's path are
filled by their verdict. The scene is ``drawing._scene``'s (boxes with ``key``, ``kind``,
``lines`` and ``classes``; arrows with ``src``, ``dst``, ``label``, ``style`` and ``taken``).
"""

from __future__ import annotations

import html
import re
import textwrap
from collections import defaultdict
from typing import Any

FONT = 11  # px; the first line of a box is bold
CHAR_W = 6.6  # px a character takes on average at FONT (Helvetica, Arial, DejaVu Sans)
LINE_H = 14
WRAP = 34  # characters a box line wraps at
PAD, GAP_X, GAP_Y, MARGIN, TITLE_H = 8, 22, 48, 16, 26
LOOP_X = 34  # how far right of its boxes an edge that goes back up curves

_KIND = {  # fill, stroke
    "entry": ("#e8f0fe", "#4a6fa5"),
    "observation": ("#fff8e1", "#b08900"),
    "root_cause": ("#fdecea", "#b23c17"),
    "constraint": ("#ede7f6", "#5e35b1"),
    "action": ("#e8f5e9", "#2e7d32"),
    "missing": ("#ffffff", "#c62828"),
}
_RADIUS = {"entry": 14, "root_cause": 10, "observation": 3, "constraint": 0, "action": 0}
_VERDICT_FILL = {"true": "#c8e6c9", "false": "#eceff1", "no_data": "#ffe0b2"}
TAKEN = "#1565c0"
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _x(text: Any) -> str:
    """Text safe in SVG (XML 1.0 has no control characters)."""
    return html.escape(_CONTROL.sub("\ufffd", str(text)), quote=True)


def _layers(keys: list[str], arrows: list[Any]) -> tuple[dict[str, int], set[tuple[str, str]]]:
    """Each box's layer, and the edges that go back (closing a loop)."""
    children: dict[str, list[str]] = defaultdict(list)
    has_parent = set()
    for a in arrows:
        children[a.src].append(a.dst)
        has_parent.add(a.dst)
    roots = [k for k in keys if k.startswith("entry:")] + [k for k in keys if k not in has_parent]
    state: dict[str, int] = {}  # 1 on the DFS stack, 2 done
    back: set[tuple[str, str]] = set()
    post: list[str] = []
    for root in [*roots, *keys]:
        if root in state:
            continue
        state[root] = 1
        stack = [(root, iter(children[root]))]
        while stack:
            node, it = stack[-1]
            child = next(it, None)
            if child is None:
                stack.pop()
                state[node] = 2
                post.append(node)
            elif state.get(child) == 1:
                back.add((node, child))
            elif child not in state:
                state[child] = 1
                stack.append((child, iter(children[child])))
    depth = dict.fromkeys(keys, 0)
    for node in reversed(post):  # a topological order of the edges that do not go back
        for child in children[node]:
            if (node, child) not in back:
                depth[child] = max(depth[child], depth[node] + 1)
    return depth, back


def _order(depth: dict[str, int], arrows: list[Any]) -> list[list[str]]:
    """The boxes of each layer, left to right: two sweeps down by the parents' mean place."""
    layers: list[list[str]] = [[] for _ in range(max(depth.values(), default=0) + 1)]
    for key, d in depth.items():
        layers[d].append(key)
    parents: dict[str, list[str]] = defaultdict(list)
    for a in arrows:
        if depth[a.src] < depth[a.dst]:
            parents[a.dst].append(a.src)
    for _ in range(2):
        place = {k: i for layer in layers for i, k in enumerate(layer)}
        for layer in layers[1:]:
            mean = {
                k: sum(place[p] for p in parents[k]) / len(parents[k]) if parents[k] else place[k]
                for k in layer
            }
            layer.sort(key=lambda k: mean[k])
            place.update({k: i for i, k in enumerate(layer)})
    return layers


def _box_lines(box: Any) -> list[str]:
    return [box.lines[0]] + [w for line in box.lines[1:] for w in textwrap.wrap(line, WRAP)]


def scene_svg(scene: Any, verdicts: dict[str, str] | None = None, run: bool = False) -> str:
    """The scene as a standalone SVG document. ``run``: the scene shows a run's path, whose
    edges stand out; ``verdicts`` (node id -> verdict value) fills the boxes on it."""
    verdicts = verdicts or {}
    keys = list(scene.boxes)
    depth, back = _layers(keys, scene.arrows)
    layers = _order(depth, scene.arrows)
    lines = {k: _box_lines(scene.boxes[k]) for k in keys}
    size = {
        k: (
            max(60.0, max(len(t) for t in lines[k]) * CHAR_W + 2 * PAD),
            len(lines[k]) * LINE_H + 2 * PAD - 4,
        )
        for k in keys
    }
    row_w = [sum(size[k][0] for k in layer) + GAP_X * (len(layer) - 1) for layer in layers]
    inner_w = max([*row_w, len(scene.title) * CHAR_W * 1.2])
    loops = bool(back) or any(depth[a.src] >= depth[a.dst] for a in scene.arrows)
    pos: dict[str, tuple[float, float]] = {}  # top-left corner
    y = MARGIN + TITLE_H
    for layer, width in zip(layers, row_w, strict=True):
        x = MARGIN + (inner_w - width) / 2
        for k in layer:
            pos[k] = (x, y)
            x += size[k][0] + GAP_X
        y += max((size[k][1] for k in layer), default=0) + GAP_Y
    total_w = MARGIN * 2 + inner_w + (LOOP_X + 40 if loops else 0)
    total_h = y - GAP_Y + MARGIN
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w:.0f}" height="{total_h:.0f}"'
        f' viewBox="0 0 {total_w:.0f} {total_h:.0f}" font-family="Helvetica, Arial, sans-serif"'
        f' font-size="{FONT}" role="img" aria-label="{_x(scene.title)}">',
        "<defs>"
        + "".join(
            f'<marker id="arrow-{name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="9"'
            f' markerHeight="9" markerUnits="userSpaceOnUse" orient="auto">'
            f'<path d="M0,0 L10,5 L0,10 z"'
            f' fill="{color}"/></marker>'
            for name, color in (("plain", "#777"), ("taken", TAKEN))
        )
        + "</defs>",
        f'<text x="{total_w / 2:.0f}" y="{MARGIN + 12}" text-anchor="middle" font-size="13"'
        f' font-weight="bold">{_x(scene.title)}</text>',
    ]
    out += _edges(scene, pos, size, depth, run)
    out += [_box(scene.boxes[k], lines[k], pos[k], size[k], verdicts.get(k)) for k in keys]
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _edges(scene: Any, pos: dict, size: dict, depth: dict[str, int], run: bool) -> list[str]:
    out: list[str] = []
    right = max(pos[k][0] + size[k][0] for k in pos) if pos else 0
    for a in scene.arrows:
        (sx, sy), (sw, sh) = pos[a.src], size[a.src]
        (dx, dy), (dw, _) = pos[a.dst], size[a.dst]
        if depth[a.src] < depth[a.dst]:  # down: bottom centre to top centre
            x1, y1, x2, y2 = sx + sw / 2, sy + sh, dx + dw / 2, dy
            bend = (y2 - y1) / 2
            d = f"M{x1:.1f},{y1:.1f} C{x1:.1f},{y1 + bend:.1f} {x2:.1f},{y2 - bend:.1f} {x2:.1f},{y2:.1f}"
            lx, ly = (x1 + x2) / 2, (y1 + y2) / 2
        else:  # back up a loop, or across a layer: around the right of the boxes
            x1, y1 = sx + sw, sy + sh / 2
            x2, y2 = dx + dw, dy + size[a.dst][1] / 2
            far = right + LOOP_X
            d = f"M{x1:.1f},{y1:.1f} C{far:.1f},{y1:.1f} {far:.1f},{y2:.1f} {x2:.1f},{y2:.1f}"
            lx, ly = far - 4, (y1 + y2) / 2
        taken = a.taken and run
        stroke = (
            f'stroke="{TAKEN}" stroke-width="2.5"' if taken else 'stroke="#777" stroke-width="1.2"'
        )
        dash = {"dashed": ' stroke-dasharray="6 4"', "dotted": ' stroke-dasharray="2 3"'}.get(
            a.style, ""
        )
        marker = "taken" if taken else "plain"
        cls = "edge taken" if taken else "edge"
        out.append(
            f'<path class="{cls}" data-src="{_x(a.src)}" data-dst="{_x(a.dst)}" d="{d}"'
            f' fill="none" {stroke}{dash} marker-end="url(#arrow-{marker})"/>'
        )
        if a.label:
            out.append(
                f'<text x="{lx:.1f}" y="{ly + 3:.1f}" text-anchor="middle" font-size="9"'
                f' fill="#444" stroke="#fff" stroke-width="3" paint-order="stroke">'
                f"{_x(a.label)}</text>"
            )
    return out


def _box(box: Any, lines: list[str], at: tuple[float, float], size: tuple[float, float],
         verdict: str | None) -> str:  # fmt: skip
    (x, y), (w, h) = at, size
    fill, stroke = _KIND.get(box.kind, _KIND["missing"])
    width, dash, opacity = 1.5, "", ""
    taken = "taken" in box.classes
    if taken:
        fill = _VERDICT_FILL.get(verdict or "", fill)
        stroke, width = TAKEN, 3.0
    elif "gated" in box.classes:
        stroke, width = "#c62828", 2.5
    if box.kind == "missing" or "costly" in box.classes:
        dash = ' stroke-dasharray="5 3"'
    if "skipped" in box.classes:
        opacity = ' opacity="0.5"'
    classes = " ".join(["node", *box.classes] + ([f"v-{verdict}"] if taken and verdict else []))
    rx = h / 2 if box.kind == "entry" else _RADIUS.get(box.kind, 0)
    parts = [
        f'<g class="{_x(classes)}" data-node="{_x(box.key)}" data-y="{y:.1f}"{opacity}>',
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="{rx:.1f}"'
        f' fill="{fill}" stroke="{stroke}" stroke-width="{width}"{dash}/>',
    ]
    for i, line in enumerate(lines):
        bold = ' font-weight="bold"' if i == 0 and box.kind != "entry" else ""
        parts.append(
            f'<text x="{x + w / 2:.1f}" y="{y + PAD + 8 + i * LINE_H:.1f}" text-anchor="middle"'
            f"{bold}>{_x(line)}</text>"
        )
    parts.append("</g>")
    return "".join(parts)
