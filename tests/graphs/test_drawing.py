"""SOP drawings: every node and edge is drawn, a run's path stands out, PNGs come out of dot."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from sopgraph.graphs import drawing
from sopgraph.graphs.drawing import DrawingError, render_png, to_dot, to_mermaid
from sopgraph.graphs.loader import load_sop, load_sop_text
from sopgraph.graphs.model import Verdict

GOOD = sorted((Path(__file__).resolve().parents[1] / "data" / "good_sops").glob("*.yaml"))
MERMAID_EDGE = re.compile(r'^    (\S+) (?:-->|-\.->)(?:\|"([^"]*)"\|)? (\S+)$')
MERMAID_NODE = re.compile(r"^    (\w+)[\[({]")


def _mermaid_edges(text: str) -> list[tuple[str, str, str]]:
    return [
        (m[1], m[3], m[2] or "") for line in text.splitlines() if (m := MERMAID_EDGE.match(line))
    ]


def _sop_edges(sop) -> list[tuple[str, str]]:
    entry = [(f"start_{kind}", t) for kind, targets in sop.entry.items() for t in targets]
    return entry + [(n.id, c) for n in sop.nodes.values() for _, c in n.next.edges()]


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.stem)
def test_mermaid_draws_every_node_and_edge(path: Path):
    sop = load_sop(path)
    text = to_mermaid(sop)
    assert text.splitlines()[3] == "flowchart TD"
    drawn = {m[1] for line in text.splitlines() if (m := MERMAID_NODE.match(line))}
    assert drawn == set(sop.nodes) | {f"start_{k}" for k in sop.entry}
    assert sorted((s, d) for s, d, _ in _mermaid_edges(text)) == sorted(_sop_edges(sop))
    assert len(_mermaid_edges(text)) == sop.edge_count()


def test_mermaid_labels_edges_and_marks_kinds_and_gates():
    sop = load_sop(GOOD[[p.stem for p in GOOD].index("predicates")])
    text = to_mermaid(sop)
    labels = {(s, d): label for s, d, label in _mermaid_edges(text)}
    assert labels[("obs_auth_status", "cn_customer_reply")] == "always"
    assert labels[("obs_auth_status", "act_gdpr_notice")] == "region in ['eu', 'uk']"
    assert labels[("act_unlock", "act_escalate")] == "rejected"
    assert labels[("cn_customer_reply", "act_escalate")].startswith("the customer says")
    assert "    cn_customer_reply -.->" in text  # natural-language conditions are drawn dotted
    assert 'obs_auth_status{"' in text and 'cn_customer_reply{{"' in text
    assert 'act_unlock["' in text and "needs approval" in text
    assert re.search(r"^    class .*\bact_unlock\b.* gated$", text, re.M)


def test_mermaid_highlights_a_run_and_its_verdicts():
    sop = load_sop(GOOD[[p.stem for p in GOOD].index("loop_bounded")])
    path = ["obs_heartbeat", "act_restart", "obs_heartbeat", "act_close"]
    verdicts = {"obs_heartbeat": Verdict(value="false"), "act_restart": {"value": "true"}}
    text = to_mermaid(sop, path=path, verdicts=verdicts)
    assert "class obs_heartbeat,act_restart,act_close taken" in text
    assert "class act_escalate skipped" in text
    assert "✘ false" in text and "✔ true" in text
    edges = _mermaid_edges(text)
    styled = re.search(r"^    linkStyle ([\d,]+) ", text, re.M)[1].split(",")
    taken = {edges[int(i)][:2] for i in styled}
    assert taken == {
        ("start_robot_silent", "obs_heartbeat"),
        ("obs_heartbeat", "act_restart"),
        ("act_restart", "obs_heartbeat"),
        ("obs_heartbeat", "act_close"),
    }


def test_mermaid_ids_survive_reserved_words_and_odd_characters():
    text = """\
id: odd
title: 'Quotes "and" pipes | here'
entry: {end: [end]}
nodes:
  end:
    kind: observation
    text: 'Says "stop" | <now> #1'
    next: {true: [act.close]}
  act.close: {kind: action}
"""
    out = to_mermaid(load_sop_text(text, "odd.yaml"))
    assert '    n_end -->|"true"| act_close' in out
    assert "    start_end --> n_end" in out
    assert all(line.count('"') % 2 == 0 for line in out.splitlines()), out
    assert "#quot;stop#quot; #124; #lt;now#gt; #35;1" in out


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.stem)
def test_dot_draws_every_edge(path: Path):
    sop = load_sop(path)
    text = to_dot(sop)
    edges = re.findall(r'^    "([^"]+)" -> "([^"]+)"', text, re.M)
    expected = [
        (s.replace("start_", "entry:", 1) if s.startswith("start_") else s, d)
        for s, d in _sop_edges(sop)
    ]
    assert sorted(edges) == sorted(expected)


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.stem)
def test_dot_output_parses_and_png_renders(path: Path, tmp_path: Path):
    sop = load_sop(path)
    check = subprocess.run(["dot", "-Tcanon"], input=to_dot(sop).encode(), capture_output=True)
    assert check.returncode == 0, check.stderr.decode()
    out = render_png(sop, tmp_path / "sop.png", path=[next(iter(sop.nodes))])
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_png_without_graphviz_is_one_clear_error(monkeypatch, tmp_path: Path):
    monkeypatch.setattr(drawing.shutil, "which", lambda name: None)
    with pytest.raises(DrawingError, match="Graphviz 'dot' is not installed") as info:
        render_png(load_sop(GOOD[0]), tmp_path / "x.png")
    assert "\n" not in str(info.value)
    assert not (tmp_path / "x.png").exists()


def test_around_path_draws_the_path_and_its_untaken_branches_only():
    sop = load_sop(Path(__file__).resolve().parents[2] / "examples" / "fc_alarm_triage")
    path = ["obs_station_idle", "act_close_alarm"]
    text = to_mermaid(
        sop, path=path, verdicts={"obs_station_idle": {"value": "false"}}, around_path=True
    )
    drawn = {m[1] for line in text.splitlines() if (m := MERMAID_NODE.match(line))}
    children = set(sop.nodes["obs_station_idle"].next.children())
    assert drawn == {"start_station_idle"} | set(path) | children
    grandchildren = {c for n in children for c in sop.nodes[n].next.children()} - drawn
    assert grandchildren and not grandchildren & drawn  # two steps away: left out
    for line in text.splitlines():  # an untaken branch is its bare id, no text
        if line.startswith("    rc_robot_fault("):
            assert line == '    rc_robot_fault("<b>rc_robot_fault</b>")'
    assert all(s in drawn and d in drawn for s, d, _ in _mermaid_edges(text))


def test_node_texts_use_the_given_parameters():
    sop = load_sop(Path(__file__).resolve().parents[2] / "examples" / "fc_alarm_triage")
    default, dfw7 = to_dot(sop), to_dot(sop, params={"idle_pct_threshold": 30})
    assert "more than 25%" in default.replace("\\n", " ")
    assert "more than 30%" in dfw7.replace("\\n", " ") and "more than 25%" not in dfw7
