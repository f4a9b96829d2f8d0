"""The run console's pages as HTML: the runs, one run (its path on its SOP, every verdict, the
approvals waiting), the login form. No script; every value a run holds is escaped (``_e``):
tools, MCP servers, models and clients wrote it."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

from sopgraph.graphs.untrusted_text import printable

STYLE = """
body{font-family:system-ui,sans-serif;margin:1.2em 2em;color:#222;font-size:15px;max-width:1500px}
header{display:flex;gap:1em;align-items:baseline;border-bottom:2px solid #ddd;padding-bottom:.4em}
header h1{font-size:1.3em;margin:0}header .who{margin-left:auto;color:#555}
header form{display:inline}h2{font-size:1.12em;margin:1.2em 0 .4em}
table{border-collapse:collapse;margin:.4em 0}td,th{border:1px solid #ccc;padding:4px 8px;
text-align:left;vertical-align:top}th{background:#f3f3f3}code{font-size:.92em}
.s-finished{color:#1b7a1b}.s-interrupted{color:#a66b00;font-weight:600}.s-failed{color:#b00020}
.s-stopped{color:#555}.v-true{color:#1b7a1b;font-weight:600}.v-false{color:#555;font-weight:600}
.v-no_data{color:#a66b00;font-weight:600}.v-unresolved{color:#b00020;font-weight:600}
.waiting{border:2px solid #e0b252;background:#fff8e1;padding:.5em .8em;margin:.5em 0;border-radius:6px}
.waiting form{display:inline}button{font-size:1em;padding:3px 14px;margin-right:.4em;cursor:pointer}
button.approve{background:#e8f5e9;border:1px solid #2e7d32}button.reject{background:#fdecea;
border:1px solid #b23c17}.note{background:#e8f0fe;border:1px solid #4a6fa5;padding:.4em .8em}
.drawing{overflow-x:auto;border:1px solid #eee;padding:6px;margin:.5em 0}
.drawing svg{max-width:100%;height:auto}.facts b{display:inline-block;min-width:7em}
.error{color:#b00020}.muted{color:#777}
"""


@dataclass
class CallerView:
    """Who is logged in, and the CSRF token their forms carry ('' for a bearer header)."""

    identity: str
    csrf: str = ""


def _e(value: Any) -> str:
    """Untrusted text as HTML: controls and bidi overrides shown as escapes, then escaped."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    if len(text) > 400:
        text = text[:399] + "…"
    return html.escape(printable(text), quote=True)


def _when(iso: str | None) -> str:
    if not iso:
        return "-"
    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return _e(iso)


def _run_url(thread_id: str) -> str:
    return "/runs/" + quote(thread_id, safe="")


def _page(title: str, body: str, caller: CallerView | None = None) -> str:
    who = ""
    if caller is not None:
        logout = (
            f"<form method=post action='/logout'><input type=hidden name=csrf "
            f"value='{_e(caller.csrf)}'><button>log out</button></form>"
            if caller.csrf
            else ""
        )
        who = f"<span class=who>signed in as <b>{_e(caller.identity)}</b> {logout}</span>"
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{_e(title)} · sopgraph</title><style>{STYLE}</style></head><body>"
        f"<header><h1><a href='/'>sopgraph runs</a></h1>{who}</header>{body}</body></html>"
    )


def login_page(target: str, problem: str = "") -> str:
    error = f"<p class=error>{_e(problem)}</p>" if problem else ""
    body = (
        "<h2>Log in</h2><p>Paste a token from the console's tokens file (the file of "
        "<code>&lt;identity&gt; &lt;token&gt;</code> lines given with <code>--tokens</code> or "
        "<code>SOPGRAPH_MCP_TOKENS</code>). Approvals you give are recorded under its identity."
        f"</p>{error}<form method=post action='/login'>"
        f"<input type=hidden name=next value='{_e(target)}'>"
        "<input type=password name=token id=token size=60 autocomplete=off autofocus> "
        "<button id=login>Log in</button></form>"
    )
    return _page("Log in", body)


def message_page(
    title: str, text: str, caller: CallerView | None = None, thread_id: str | None = None
) -> str:
    back = f"<p><a href='{_run_url(thread_id)}'>back to the run</a></p>" if thread_id else ""
    body = f"<h2>{_e(title)}</h2><p class=error id=problem>{_e(text)}</p>{back}"
    return _page(title, body, caller)


def _answer_form(thread_id: str, caller: CallerView, approval: str, intr: dict) -> str:
    """The buttons for one pending gated action: the form names its interrupt and node, so a
    second click, or an answer arriving after the run moved on, is refused, never taken as the
    answer to the next gate."""
    approve = (
        "<button class=approve name=decision value=approve>Approve</button>"
        if approval != "reject"
        else "<span class=muted>(this console's policy is reject: it approves nothing)</span> "
    )
    return (
        f"<form method=post action='{_run_url(thread_id)}/decision'>"
        f"<input type=hidden name=csrf value='{_e(caller.csrf)}'>"
        f"<input type=hidden name=interrupt value='{_e(intr.get('id'))}'>"
        f"<input type=hidden name=node value='{_e(intr.get('node'))}'>{approve}"
        "<button class=reject name=decision value=reject>Reject</button></form>"
    )


def _waiting(record: Any, caller: CallerView, approval: str) -> str:
    link = f"<a href='{_run_url(record.thread_id)}'>{_e(record.thread_id)}</a>"
    items = "".join(
        f"<div class=gate data-interrupt='{_e(i.get('id'))}'><b>{_e(i.get('node'))}</b>: "
        f"{_e(i.get('action'))}" + (f" (cost {_e(i.get('cost'))})" if i.get("cost") else "")
        + f"<br>{_answer_form(record.thread_id, caller, approval, i)}</div>"
        for i in record.result.interrupts
    )  # fmt: skip
    return (
        f"<div class=waiting data-thread='{_e(record.thread_id)}'>run {link} "
        f"({_e(record.sop_id or '?')}) waits for approval of{items}</div>"
    )


def runs_page(
    store: str, runs: list[Any], waiting: list[Any], caller: CallerView, approval: str
) -> str:
    """Every run, newest first, after the approvals waiting (with their buttons)."""
    parts = [f"<p class=muted>runs in <code>{_e(str(store))}</code>, newest first</p>"]
    if waiting:
        parts.append("<h2>Waiting for approval</h2>")
        parts += [_waiting(r, caller, approval) for r in waiting]
    parts.append(f"<h2>Runs ({len(runs)})</h2>")
    if not runs:
        parts.append("<p>No runs yet: start one with <code>sopgraph run SOP --input …</code></p>")
    else:
        rows = "".join(
            f"<tr class=run data-thread='{_e(r.thread_id)}'>"
            f"<td><a href='{_run_url(r.thread_id)}'>{_e(r.thread_id)}</a></td>"
            f"<td>{_e(r.sop_id or '?')}</td><td class='status s-{_e(r.status)}'>{_e(r.status)}</td>"
            f"<td>{_when(r.started)}</td><td>{r.steps}</td><td>{_e(r.last_step or '-')}</td>"
            f"<td>{_e(r.final)}</td></tr>"
            for r in runs
        )
        parts.append(
            "<table id=runs><tr><th>thread</th><th>SOP</th><th>status</th><th>started</th>"
            f"<th>steps</th><th>last step</th><th>final</th></tr>{rows}</table>"
        )
    return _page("Runs", "".join(parts), caller)


def drawing(record: Any) -> str:
    """The run's path drawn on its SOP as inline SVG (``graphs.drawing.to_svg``), or a line
    saying why there is none."""
    from sopgraph.graphs.drawing import to_svg
    from sopgraph.graphs.loader import SopError, load_sop

    if not record.sop_path:
        return "<p class=muted>no drawing: this run's SOP was not recorded</p>"
    try:
        sop = load_sop(record.sop_path)
    except (SopError, OSError) as exc:
        return f"<p class=muted>no drawing: {_e(str(exc).splitlines()[0])}</p>"
    result = record.result
    svg = to_svg(sop, result.path, dict(result.verdicts), around_path=len(sop.nodes) > 40)
    return "<div class=drawing>" + svg[svg.find("<svg") :] + "</div>"


def _decided_by(action: dict[str, Any]) -> str:
    how = str(action.get("by") or "")
    if how == "not gated":
        return "not gated (no approval needed)"
    verb = "approved" if action.get("approved", True) else "rejected"
    who = action.get("approver")
    if how.startswith("policy:"):
        return f"{verb} by the {how.removeprefix('policy:')} policy" + (f" ({who})" if who else "")
    return f"{verb} by {who or how or 'a person'}"


def _steps(result: Any) -> str:
    rows = []
    for step in result.trail:
        verdict = step.get("verdict") or ""
        how = step.get("executor") or step.get("approval") or ""
        why = step.get("error") or step.get("explanation") or ""
        rows.append(
            f"<tr class=step data-node='{_e(step.get('node'))}'><td>{_e(step.get('node'))}</td>"
            f"<td>{_e(step.get('kind'))}</td><td>{_e(step.get('status'))}</td>"
            f"<td class='v-{_e(verdict)}'>{_e(verdict)}</td><td class=observed>"
            f"{_e(step.get('observed'))}</td><td class=threshold>{_e(step.get('threshold'))}</td>"
            f"<td>{_e(how)}</td><td>{_e(why)}</td></tr>"
        )
    return (
        "<table id=verdicts><tr><th>node</th><th>kind</th><th>status</th><th>verdict</th>"
        "<th>observed</th><th>threshold</th><th>by</th><th>explanation</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def run_page(
    record: Any, svg: str, caller: CallerView, approval: str, answered: str | None = None
) -> str:
    """One run: its facts, the approvals waiting, its path on its SOP, its verdicts, actions."""
    result = record.result
    parts = []
    if answered in ("approve", "reject"):
        verb = "approved" if answered == "approve" else "rejected"
        parts.append(f"<p class=note id=answered>You {verb} as {_e(caller.identity)}.</p>")
    parts.append(
        f"<h2>Run <code id=thread>{_e(record.thread_id)}</code></h2><div class=facts>"
        f"<div><b>SOP</b> {_e(record.sop_id or '?')} <code>{_e(record.sop_path or '')}</code></div>"
        f"<div><b>status</b> <span id=status class='s-{_e(record.status)}'>{_e(record.status)}"
        f"</span> ({_e(record.final)})</div>"
        f"<div><b>started</b> {_when(record.started)}, last checkpoint {_when(record.updated)}</div>"
        f"<div><b>path</b> {_e(' → '.join(result.path) or '-')}</div></div>"
    )
    if result.interrupts:
        parts.append("<h2>Waiting for approval</h2>" + _waiting(record, caller, approval))
    parts.append("<h2>Path on the SOP</h2>" + svg)
    parts.append("<h2>Verdicts</h2>" + _steps(result))
    if result.actions:
        rows = "".join(
            f"<tr class=action data-node='{_e(a.get('node'))}'><td>{_e(a.get('node'))}</td>"
            f"<td>{_e(a.get('status'))}</td><td class=decided>{_e(_decided_by(a))}</td>"
            f"<td class=approver>{_e(a.get('approver'))}</td></tr>"
            for a in result.actions
        )
        parts.append(
            "<h2>Actions</h2><table id=actions><tr><th>action</th><th>status</th>"
            f"<th>decided</th><th>approver</th></tr>{rows}</table>"
        )
    answers = getattr(record, "answers", None) or []
    if answers:  # every answer to a gated action: the duplicate, stale and refused ones too
        rows = "".join(
            f"<tr class='answer a-{_e(a['outcome'])}'><td>{_when(a['at'])}</td>"
            f"<td>{_e(a['node'])}</td><td>{_e(a['decision'])}</td><td>{_e(a['by'])}</td>"
            f"<td>{_e(a['outcome'])}</td><td>{_e(a['detail'])}</td></tr>"
            for a in answers
        )
        parts.append(
            "<h2>Answers</h2><table id=answers><tr><th>when</th><th>action</th><th>decision"
            f"</th><th>by</th><th>outcome</th><th>why</th></tr>{rows}</table>"
        )
    problems = {**result.refused, **result.unresolved, **result.unmatched, **result.bounded}
    if problems:
        items = "".join(f"<li>{_e(n)}: {_e(w)}</li>" for n, w in problems.items())
        parts.append(f"<h2>Open nodes</h2><ul class=error>{items}</ul>")
    return _page(f"Run {record.thread_id}", "".join(parts), caller)
