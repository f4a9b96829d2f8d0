"""A self-contained HTML report of triage runs: per alarm its outcome, the path it took, and
every verdict in the SOP's own words and units.

The drawing is an inline SVG (no script, no network needed to view it): from Graphviz when
``dot`` is installed, else laid out in pure Python (``graphs/svg_layout.py``), so the report
needs no system package. It shows the path taken
and the branches not taken one step away, not the whole SOP, at its natural size.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from sopgraph.graphs.drawing import to_dot, to_svg
from sopgraph.graphs.model import Sop
from sopgraph.graphs.units import UNITS, threshold_unit, with_unit
from sopgraph.graphs.untrusted_text import printable
from sopgraph.report import status_of

_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em 2em;color:#222;font-size:15px;max-width:1800px}
h1{font-size:1.5em}h2{font-size:1.2em;margin:0 0 .4em}
table{border-collapse:collapse;margin:.6em 0}
td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}
td:first-child a{white-space:nowrap}
th{background:#f3f3f3}.ok{color:#1b7a1b}.bad{color:#b00020}.num{text-align:right}
.summary td,.summary th{border:none;padding:1px 10px 1px 0;background:none}
section.alarm{border-top:3px solid #ddd;margin-top:1.6em;padding-top:.8em}
.facts{margin:.3em 0 .6em}.facts b{display:inline-block;min-width:7em}
.chip{display:inline-block;border-radius:4px;padding:1px 7px;margin:1px 3px 1px 0;font-family:monospace}
.rc{background:#fdecea;border:1px solid #e0a39a}.act{background:#e8f5e9;border:1px solid #9bc59d}
.drawing{overflow-x:auto;border:1px solid #eee;padding:6px;margin:.5em 0}
.drawing svg{max-width:100%;height:auto}
.v-true{color:#1b7a1b;font-weight:600}.v-false{color:#555;font-weight:600}
.v-no_data{color:#a66b00;font-weight:600}.v-unresolved{color:#b00020;font-weight:600}
code{font-size:.95em}details.raw summary{cursor:pointer;color:#666;font-size:.85em}
details.raw pre{font-size:.8em;margin:.2em 0;white-space:pre-wrap;max-width:40em}
body:has(.only:target) :is(h1,table.summary,table.overview,section.alarm:not(:has(.only:target))){display:none}
body:has(.only:target) section.alarm{border:none;margin:0;padding:0}
"""


def _svg(sop: Sop, path: list[str], verdicts: dict[str, Any], params: dict[str, Any]) -> str:
    dot = shutil.which("dot")
    options = {"params": params, "around_path": True}
    if dot:
        proc = subprocess.run(
            [dot, "-Tsvg"], input=to_dot(sop, path, verdicts, **options),
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        if proc.returncode == 0:
            return proc.stdout[proc.stdout.find("<svg") :]
    # no Graphviz (or it failed): the same scene, laid out in Python
    svg = to_svg(sop, path, verdicts, **options)
    return svg[svg.find("<svg") :]


def _text(value: Any, limit: int = 300) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    # a model or a server wrote it: bidi overrides and lone surrogates are escaped too
    return html.escape(printable(text, multiline=True))


def threshold_with_unit(
    sop: Sop, node_id: str, threshold: Any, params: dict[str, Any], observed: Any = None
) -> str:
    """The threshold as the SOP text writes it: ``30%`` when the text says
    ``{idle_pct_threshold}%`` and the site's value is 30, or in the unit ``observed`` is
    measured in for a threshold the tool derived; the bare value otherwise."""
    return _threshold_text(threshold, threshold_unit(sop, node_id, threshold, params, observed))


def _threshold_text(threshold: Any, unit: str | None) -> str:
    if threshold is None or isinstance(threshold, dict | list):
        return "" if threshold is None else json.dumps(threshold)
    return with_unit(threshold, unit)


def observed_with_unit(observed: Any, unit: str | None) -> str:
    """What the tool observed, its measurements in the threshold's unit: ``67.27%``, or
    ``quadrant NE, fill 85.2%`` for a dict (keys that name the unit are shown by the unit)."""
    if observed is None:
        return ""
    if not isinstance(observed, dict):
        if isinstance(observed, list):
            return ", ".join(map(str, observed)) or "none"
        return with_unit(observed, unit)
    words = UNITS.get(unit or "", frozenset())
    parts = []
    for key, value in observed.items():
        tokens = key.split("_")
        shown = unit if words & set(tokens) else None
        label = " ".join(t for t in tokens if t not in words or shown is None) or key
        if isinstance(value, dict):
            inner = ", ".join(f"{k} {with_unit(v, shown)}" for k, v in value.items())
            parts.append(f"{label}: {inner}")
        elif isinstance(value, list):
            parts.append(f"{label}: {', '.join(map(str, value)) or 'none'}")
        else:
            parts.append(f"{label} {with_unit(value, shown)}")
    return "; ".join(parts)


def _chips(items: list[str], cls: str) -> str:
    if not items:
        return "<span>none</span>"
    return "".join(f"<span class='chip {cls}'>{html.escape(i)}</span>" for i in items)


def _found(result: Any, kind: str) -> list[str]:
    kinds = {s["node"]: s.get("kind") for s in result.trail}
    return [n for n, v in result.verdicts.items() if kinds.get(n) == kind and v.value == "true"]


def _actions(result: Any) -> list[str]:
    return [
        f"{a['node']} ({a.get('status')}{', ' + a['by'] if a.get('by') else ''})"
        for a in result.actions
    ]


def _mark(correct: Any) -> str:
    return {True: "<span class=ok>✔ matches</span>", False: "<span class=bad>✘ differs</span>"}.get(
        correct, ""
    )


def _anchor(alarm_id: str) -> str:
    return "alarm-" + re.sub(r"[^A-Za-z0-9_-]", "_", alarm_id)


def _overview(runs: list[dict[str, Any]]) -> str:
    rows = []
    for run in runs:
        result = run["result"]
        rows.append(
            f"<tr><td><a href='#{_anchor(run['alarm_id'])}'>{html.escape(run['alarm_id'])}</a></td>"
            f"<td>{html.escape(run['type'])}</td><td>{html.escape(run['site'])}</td>"
            f"<td>{html.escape(status_of(result))}</td>"
            f"<td>{_chips(_found(result, 'root_cause'), 'rc')}</td>"
            f"<td>{_chips([a['node'] for a in result.actions], 'act')}</td>"
            f"<td class=num>{len(result.path)}</td><td class=num>{run['ms']:.0f}</td>"
            f"<td>{_mark(run.get('correct'))}</td></tr>"
        )
    return (
        "<table class=overview><tr><th>alarm</th><th>type</th><th>site</th><th>status</th><th>root causes</th>"
        "<th>actions</th><th>nodes</th><th>ms</th><th>ground truth</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _verdict_rows(sop: Sop, result: Any, params: dict[str, Any]) -> str:
    rows = []
    for s in result.trail:
        node = sop.nodes.get(s["node"])
        rule = sop.render_text(node, params) if node is not None and node.text else ""
        value = s.get("verdict") or ("unresolved" if s.get("status") == "unresolved" else "")
        if node is not None and node.is_action:
            value = ""
        said = s.get("explanation") or s.get("error") or ""
        raw = {k: s[k] for k in ("observed", "threshold") if s.get(k) is not None}
        raw_html = (
            f"<details class=raw><summary>as the tool returned it</summary>"
            f"<pre>{_text(raw, 1000)}</pre></details>"
            if raw
            else ""
        )
        via = s.get("executor") or s.get("approval") or ""
        if s.get("tool_version"):
            via += f" v{s['tool_version']}"
        unit = threshold_unit(sop, s["node"], s.get("threshold"), params, s.get("observed"))
        rows.append(
            f"<tr><td><code>{html.escape(s['node'])}</code><br><small>{html.escape(s.get('kind', ''))}"
            f"</small></td><td>{html.escape(rule)}</td>"
            f"<td class='v-{html.escape(value)}'>{html.escape(value or str(s.get('status', '')))}</td>"
            f"<td class=num>{html.escape(_threshold_text(s.get('threshold'), unit))}</td>"
            f"<td class=obs>{_text(observed_with_unit(s.get('observed'), unit), 160)}</td>"
            f"<td>{_text(said)}{raw_html}</td><td>{html.escape(via)}</td></tr>"
        )
    return (
        "<table><tr><th>node</th><th>what the SOP checks (site parameters)</th><th>verdict</th>"
        "<th>threshold</th><th>observed</th><th>the tool's account</th><th>decided by</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _section(sop: Sop, run: dict[str, Any]) -> str:
    result, params = run["result"], run.get("params") or {}
    verdicts = {k: v.model_dump() for k, v in result.verdicts.items()}
    head = (
        f"{html.escape(run['alarm_id'])} · {html.escape(run['type'])} · "
        f"{html.escape(run['site'])} · {run['ms']:.0f} ms {_mark(run.get('correct'))}"
    )
    overrides = {k: v for k, v in params.items() if sop.params.get(k) != v}
    facts = [
        ("status", html.escape(status_of(result))),
        ("root causes", _chips(_found(result, "root_cause"), "rc")),
        ("actions", _chips(_actions(result), "act")),
        ("path", " → ".join(f"<code>{html.escape(n)}</code>" for n in result.path)),
    ]
    if overrides:
        facts.append(
            (
                "site params",
                html.escape(", ".join(f"{k}={v}" for k, v in sorted(overrides.items()))),
            )
        )
    return (
        f"<section class=alarm id='{_anchor(run['alarm_id'])}'><span class=only id='only-"
        f"{_anchor(run['alarm_id'])}'></span><h2>{head} <small><a href='#only-{_anchor(run['alarm_id'])}'>"
        "this alarm alone</a></small></h2><div class=facts>"
        + "<br>".join(f"<b>{k}</b> {v}" for k, v in facts)
        + f"</div><div class=drawing>{_svg(sop, result.path, verdicts, params)}</div>"
        + _verdict_rows(sop, result, params)
        + "</section>"
    )


def render_report(sop: Sop, runs: list[dict[str, Any]], summary: dict[str, Any], title: str) -> str:
    """``runs``: dicts with alarm_id, site, type, ms, the RunResult as ``result``, and
    optionally ``correct`` (against ground truth) and ``params`` (the site's parameters)."""
    parts = [
        f"<!doctype html><meta charset=utf-8><title>{html.escape(title)}</title>",
        f"<style>{_STYLE}</style><h1>{html.escape(title)}</h1>",
        "<table class=summary>"
        + "".join(
            f"<tr><th>{html.escape(str(k))}</th><td>{_text(v)}</td></tr>"
            for k, v in summary.items()
        )
        + "</table>",
        _overview(runs),
    ]
    parts += [_section(sop, run) for run in runs]
    return "\n".join(parts)


def write_report(
    path: Path, sop: Sop, runs: list[dict[str, Any]], summary: dict[str, Any], title: str
) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(sop, runs, summary, title), encoding="utf-8")
    return path
