"""The report's drawing needs no system package (issue 27, finding 8): with Graphviz's ``dot``
off the PATH, a run's report still draws its path as an inline SVG (pure Python), boxes by
depth, arrows between them, the nodes on the path colored by their verdict."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from sop_factory import make_sop

from sopgraph.graphs.loader import load_sop
from sopgraph.html_report import render_report
from sopgraph.runtime.runner import Session

SOP = {
    "id": "dock",
    "title": "Dock triage",
    "params": {"idle_pct_threshold": 25, "age_max_days": 3},
    "entry": {"station_idle": ["obs_idle"]},
    "nodes": {
        "obs_idle": {"kind": "observation",
                     "text": "The station was idle more than {idle_pct_threshold}% of the time.",
                     "next": {"true": ["rc_fault", "rc_old_part"], "false": ["act_close"]}},
        "rc_fault": {"kind": "root_cause", "text": "The robot is in fault.",
                     "next": {"true": ["act_ticket"], "false": ["far_away"]}},
        "rc_old_part": {"kind": "root_cause", "text": "The part is older than {age_max_days} days.",
                        "next": {"true": ["act_swap"]}},
        "far_away": {"kind": "constraint", "text": "never reached", "next": {"true": ["act_far"]}},
        "act_ticket": {"kind": "action", "text": "Open a ticket."},
        "act_swap": {"kind": "action", "text": "Swap the part."},
        "act_close": {"kind": "action", "text": "Close the alarm."},
        "act_far": {"kind": "action", "text": "Two steps off the path."},
    },
}  # fmt: skip
TOOLS = {
    "obs_idle": "return Verdict(value=True, observed=45.0, threshold=25)",
    "rc_fault": "return Verdict(value=True, observed='fault', threshold='fault')",
    "rc_old_part": "return Verdict(value=False, observed=1.5, threshold=3)",
}
SVG = "{http://www.w3.org/2000/svg}"
GOOD = Path(__file__).resolve().parents[1] / "data" / "good_sops"


@pytest.fixture
def no_dot(tmp_path, monkeypatch):
    """A PATH with an empty folder only: no Graphviz."""
    bare = tmp_path / "bin"
    bare.mkdir()
    monkeypatch.setenv("PATH", str(bare))
    assert shutil.which("dot") is None


def _boxes(svg: ET.Element) -> dict[str, set[str]]:
    """node id -> the classes of its box."""
    return {
        g.get("data-node"): set(g.get("class", "").split())
        for g in svg.iter(f"{SVG}g")
        if g.get("data-node")
    }


async def test_the_report_draws_an_svg_without_graphviz(tmp_path, monkeypatch, no_dot):
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    root = make_sop(tmp_path / "sop", SOP, TOOLS)
    sop = load_sop(root)
    async with Session(root, mcp=False, checkpoint="memory") as s:
        result = await s.run({"type": "station_idle"}, thread_id="a1")
    run = {"alarm_id": "ALM-1", "site": "DFW7", "type": "station_idle", "ms": 12.0,
           "result": result}  # fmt: skip
    page = render_report(sop, [run], {"alarms": 1}, "Dock report")
    drawing = page.split("<div class=drawing>")[1].split("</div>")[0]
    assert drawing.startswith("<svg"), drawing[:200]
    assert "flowchart TD" not in page  # no Mermaid source shown as text
    svg = ET.fromstring(drawing)
    boxes = _boxes(svg)
    # the path and the branches one step off it, as with dot; not two steps away
    assert {"obs_idle", "rc_fault", "rc_old_part", "act_ticket", "far_away"} <= set(boxes)
    assert "act_far" not in boxes
    assert {"taken", "v-true"} <= boxes["obs_idle"] and {"taken", "v-false"} <= boxes["rc_old_part"]
    assert "taken" not in boxes["far_away"]
    texts = " ".join(t.text or "" for t in svg.iter(f"{SVG}text"))
    assert "obs_idle" in texts and "more than 25% of the time" in texts


@pytest.mark.parametrize("name", ["parallel", "loop_bounded", "predicates"])
def test_every_node_and_edge_is_drawn_in_layers(name):
    from sopgraph.graphs.drawing import to_svg

    sop = load_sop(GOOD / f"{name}.yaml")
    svg = ET.fromstring(to_svg(sop))
    boxes = _boxes(svg)
    assert set(boxes) == set(sop.nodes) | {f"entry:{k}" for k in sop.entry}
    edges = [p for p in svg.iter(f"{SVG}path") if "edge" in p.get("class", "")]
    assert len(edges) == sop.edge_count()  # the entry edges included
    # an entry sits above the nodes it starts, and a child below its parent unless a loop
    # leads back to it
    y = {
        g.get("data-node"): float(g.get("data-y"))
        for g in svg.iter(f"{SVG}g")
        if g.get("data-node")
    }
    for kind, targets in sop.entry.items():
        assert all(y[f"entry:{kind}"] < y[t] for t in targets)
    width, height = float(svg.get("width")), float(svg.get("height"))
    for g in svg.iter(f"{SVG}g"):
        if g.get("data-node"):
            rect = next(g.iter(f"{SVG}rect"))
            x0, y0 = float(rect.get("x")), float(rect.get("y"))
            assert 0 <= x0 and x0 + float(rect.get("width")) <= width
            assert 0 <= y0 and y0 + float(rect.get("height")) <= height
