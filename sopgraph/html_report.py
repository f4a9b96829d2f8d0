"""A self-contained HTML report of triage runs: the graph with the path taken, and every verdict.

The drawing is an inline SVG from Graphviz when ``dot`` is installed (no script, no network
needed to view it); otherwise the Mermaid source is embedded as text.
"""

from __future__ import annotations

import html
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from sopgraph.graphs.drawing import to_dot, to_mermaid
from sopgraph.graphs.model import Sop

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}
th{background:#f3f3f3}.ok{color:#070}.bad{color:#b00}details{margin:1em 0}
svg{max-width:100%;height:auto}summary{cursor:pointer;font-weight:600}
"""


def _svg(sop: Sop, path: list[str], verdicts: dict[str, Any]) -> str:
    dot = shutil.which("dot")
    if dot:
        proc = subprocess.run(
            [dot, "-Tsvg"], input=to_dot(sop, path=path, verdicts=verdicts),
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        if proc.returncode == 0:
            start = proc.stdout.find("<svg")
            return proc.stdout[start:]
    return "<pre>" + html.escape(to_mermaid(sop, path=path, verdicts=verdicts)) + "</pre>"


def _cell(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return html.escape(text if len(text) < 200 else text[:199] + "…")


def render_report(sop: Sop, runs: list[dict[str, Any]], summary: dict[str, Any], title: str) -> str:
    """``runs``: dicts with alarm_id, site, type, ms, correct (or None), and the RunResult."""
    parts = [f"<!doctype html><meta charset=utf-8><title>{html.escape(title)}</title>",
             f"<style>{_STYLE}</style><h1>{html.escape(title)}</h1>"]  # fmt: skip
    parts.append("<table>" + "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{_cell(v)}</td></tr>" for k, v in summary.items()
    ) + "</table>")  # fmt: skip
    for run in runs:
        result = run["result"]
        mark = {True: "<span class=ok>✔ matches ground truth</span>",
                False: "<span class=bad>✘ differs from ground truth</span>"}.get(run.get("correct"), "")  # fmt: skip
        verdicts = {k: v.model_dump() for k, v in result.verdicts.items()}
        parts.append(
            f"<details><summary>{html.escape(run['alarm_id'])} · {html.escape(run['type'])} · "
            f"{html.escape(run['site'])} · {run['ms']:.1f} ms · {result.status} {mark}</summary>"
        )
        parts.append(_svg(sop, result.path, verdicts))
        rows = "".join(
            f"<tr><td>{html.escape(s['node'])}</td><td>{html.escape(s.get('kind', ''))}</td>"
            f"<td>{html.escape(str(s.get('status', '')))}</td><td>{_cell(s.get('verdict'))}</td>"
            f"<td>{_cell(s.get('observed'))}</td><td>{_cell(s.get('threshold'))}</td>"
            f"<td>{_cell(s.get('executor') or s.get('approval'))}</td>"
            f"<td>{_cell(s.get('explanation') or s.get('error'))}</td></tr>"
            for s in result.trail
        )
        parts.append(
            "<table><tr><th>node</th><th>kind</th><th>status</th><th>verdict</th><th>observed</th>"
            f"<th>threshold</th><th>executor</th><th>explanation</th></tr>{rows}</table></details>"
        )
    return "\n".join(parts)


def write_report(
    path: Path, sop: Sop, runs: list[dict[str, Any]], summary: dict[str, Any], title: str
) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(sop, runs, summary, title), encoding="utf-8")
    return path
