"""The draft review pages of ``sopgraph ui --draft DIR``: a draft's document beside its graph,
each sentence linked to the nodes that cite it, the unused sentences, the failed checks and
the judgement steps (``graphs.drafting.review_page`` computes them; this module draws them).

The console allows no script (``console.SECURITY_HEADERS``), so the highlighting is CSS: each
node box of the drawing is a link to its first sentence and each sentence's node names link to
their boxes; hovering either, or the ``:target`` a click sets, lights up both through
``:has()`` rules written for this draft's citations. Every value from the draft's files is
escaped: the document, and whoever edited the YAML, wrote it.

Example:
    >>> console = ReviewConsole(store, tokens, drafts=draft_names([Path("drafts/service")]))
    >>> app = console.app()  # the run console, plus /drafts and /drafts/<name>
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from sopgraph.graphs.drafting.review_page import (
    NodeRow,
    Review,
    ReviewError,
    SentenceRow,
    read_review,
)
from sopgraph.graphs.untrusted_text import printable
from sopgraph.mcp_servers import console_pages as pages
from sopgraph.mcp_servers.console import Console, _to_login, caller_view

HIGHLIGHT = "#fff176"
REVIEW_STYLE = """
.review{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1.15fr);gap:1.4em}
#document{list-style:none;padding:0;margin:0}
.sent{padding:3px 6px;margin:1px 0;border-left:5px solid #ddd;scroll-margin-top:30vh}
.sent .cite{color:#777;font-size:.8em;margin-right:.5em;text-decoration:none}
.sent .by{font-size:.82em;margin-left:.3em}.sent .by a{color:#4a6fa5}
.sent.cited{border-left-color:#4a6fa5}.sent.unused{border-left-color:#b00020;background:#fdecea}
.sent.uncovered{border-left-color:#b00020;background:#fdecea;font-weight:600}
.sent.background{color:#888}.sent:hover{outline:1px solid #bbb}
.graph{position:sticky;top:.5em;align-self:start;max-height:96vh;overflow:auto}
.graph .drawing a{cursor:pointer}
g.node.judgement rect{stroke:#e65100;stroke-width:3;stroke-dasharray:7 3}
.flag{color:#e65100;font-weight:600}.legend span{margin-right:1.2em;padding:1px 6px}
.legend .k-cited{border-left:5px solid #4a6fa5}.legend .k-unused{border-left:5px solid #b00020}
.legend .k-judge{border:2px dashed #e65100}.ok{color:#1b7a1b;font-weight:600}
"""


@dataclass
class ReviewConsole(Console):
    """The run console with the review pages of ``drafts`` (a URL name -> draft folder)."""

    drafts: dict[str, Path] = field(default_factory=dict)

    def app(self) -> Starlette:
        app = super().app()
        app.router.routes[:0] = [
            Route("/drafts", self.drafts_page),
            Route("/drafts/{name}", self.draft_page),
        ]
        return app

    async def drafts_page(self, request: Request) -> Response:
        caller = self._caller(request)
        if caller is None:
            return _to_login(request)
        rows = [
            (name, await run_in_threadpool(_read, folder)) for name, folder in self.drafts.items()
        ]
        return HTMLResponse(drafts_page(rows, caller_view(caller)))

    async def draft_page(self, request: Request) -> Response:
        caller = self._caller(request)
        if caller is None:
            return _to_login(request)
        name = request.path_params["name"]
        view = caller_view(caller)
        folder = self.drafts.get(name)
        if folder is None:
            text = f"no draft {name!r} in this console; its drafts are at /drafts"
            return HTMLResponse(pages.message_page("No such draft", text, view), 404)
        review = await run_in_threadpool(_read, folder)
        if isinstance(review, str):  # edited or removed since the console started
            return HTMLResponse(pages.message_page("Not a draft", review, view), 409)
        return HTMLResponse(await run_in_threadpool(review_page, review, view))


def draft_names(folders: list[Path]) -> dict[str, Path]:
    """A URL name for each draft folder: its folder name, made unique with ``-2``, ``-3``..."""
    names: dict[str, Path] = {}
    for folder in folders:
        base = folder.resolve().name or "draft"
        name, n = base, 1
        while name in names:
            n += 1
            name = f"{base}-{n}"
        names[name] = folder
    return names


def _read(folder: Path) -> Review | str:
    try:
        return read_review(folder)
    except ReviewError as exc:
        return str(exc)


def _t(value: object) -> str:
    """Untrusted text as HTML, whole (a document's sentence is not cut as run values are)."""
    return html.escape(printable(str(value)), quote=True)


def _url(name: str) -> str:
    return "/drafts/" + quote(name, safe="")


def _verdict(review: Review) -> str:
    if review.problems:
        return (
            f"<span class=error>{len(review.problems)} failed check(s): publish refuses it</span>"
        )
    return "<span class=ok>all checks pass: <code>sopgraph publish</code> accepts it</span>"


def drafts_page(rows: list[tuple[str, Review | str]], caller: pages.CallerView) -> str:
    """Every draft this console reviews, with its failed checks, judgement steps, unused lines."""
    body = ["<p class=muted><a href='/'>runs</a> · drafts</p><h2>Drafts to review</h2>"]
    items = []
    for name, review in rows:
        link = f"<a href='{_url(name)}'>{_t(name)}</a>"
        if isinstance(review, str):
            items.append(
                f"<tr class=draft><td>{link}</td><td colspan=4 class=error>{_t(review)}</td></tr>"
            )
            continue
        items.append(
            f"<tr class=draft data-draft='{_t(name)}'><td>{link}</td><td>{_t(review.document)}</td>"
            f"<td>{_verdict(review)}</td><td>{len(review.judgement)}</td>"
            f"<td>{len(review.unused)}</td></tr>"
        )
    body.append(
        "<table id=drafts><tr><th>draft</th><th>document</th><th>checks</th>"
        f"<th>judgement steps</th><th>unused sentences</th></tr>{''.join(items)}</table>"
    )
    return pages._page("Drafts", "".join(body), caller)


def review_page(review: Review, caller: pages.CallerView) -> str:
    """One draft: its failed checks, the document beside the graph (linked both ways), the
    judgement steps, the unused sentences and every node with its line in sop.yaml."""
    by_id = {n.id: n for n in review.nodes}
    parts = [
        f"<style>{REVIEW_STYLE}{_links_css(review)}</style>",
        "<p class=muted><a href='/'>runs</a> · <a href='/drafts'>drafts</a></p>",
        f"<h2>Draft <code id=folder>{_t(review.folder)}</code>: {_t(review.title)}</h2>",
        f"<div class=facts><div><b>document</b> {_t(review.document)}</div>"
        f"<div><b>candidate kept</b> {_t(review.chosen or '-')}</div>"
        f"<div><b>checks</b> <span id=verdict>{_verdict(review)}</span></div>"
        f"<div><b>nodes</b> {len(review.nodes)}, {len(review.judgement)} judgement step(s), "
        f"{len(review.unused)} unused sentence(s)</div></div>",
    ]
    if review.problems:
        items = "".join(f"<li><code>{_t(p)}</code></li>" for p in review.problems)
        parts.append(f"<h2>Failed checks ({len(review.problems)})</h2><ul id=problems>{items}</ul>")
    parts.append(
        "<p class=legend><span class=k-cited>cited by a node</span><span class=k-unused>"
        "unused (no node encodes it)</span><span class=k-judge>judgement step</span>"
        "<span class=muted>hover or click a sentence or a node to see its match</span></p>"
    )
    sentences = "".join(_sentence(s, by_id) for s in review.sentences)
    parts.append(
        "<div class=review><section class=doc><h2>The document</h2>"
        f"<ol id=document>{sentences}</ol></section><section class=graph><h2>The graph</h2>"
        f"{_drawing(review)}</section></div>"
    )
    parts.append(_judgement(review))
    parts.append(_unused(review))
    parts.append(_nodes(review))
    return pages._page(f"Draft {review.title}", "".join(parts), caller)


def _sentence(s: SentenceRow, by_id: dict[str, NodeRow]) -> str:
    where = s.cite.rpartition(" (s")[0] or s.cite
    links = "".join(
        f" <a class=nref href='#n{by_id[n].index}'>{_t(n)}</a>" for n in s.nodes if n in by_id
    )
    by = f"<span class=by>→{links}</span>" if links else ""
    if s.state == "unused":
        by = "<span class='by muted'>(listed unused)</span>"
    elif s.state == "uncovered":
        by = "<span class='by error'>(cited by no node, not listed unused)</span>"
    return (
        f"<li id=s{s.number} class='sent {s.state}' data-sentence={s.number}>"
        f"<a class=cite href='#s{s.number}'>{_t(where)}</a><span class=text>{_t(s.text)}</span>"
        f"{by}</li>"
    )


def _links_css(review: Review) -> str:
    """The ``:has()`` rules that light up a node with its sentences, and the other way round:
    on hover, and on the ``:target`` a click sets. Selectors use the page's own anchors
    (``#nI``, ``#sN``), never a node id, which the YAML's editor chose."""
    light_s = f"{{background:{HIGHLIGHT};outline:2px solid #f9a825}}"
    light_n = "{stroke:#f57f17;stroke-width:5;stroke-dasharray:none}"
    rules = [f".sent:target{light_s}", f"g.node:target rect{light_n}"]
    known = {s.number for s in review.sentences}
    for n in review.nodes:
        for k in n.sentences:
            if k not in known:
                continue
            rules.append(f".review:has(#n{n.index}:is(:hover,:target)) #s{k}{light_s}")
            rules.append(f".review:has(#s{k}:is(:hover,:target)) #n{n.index} rect{light_n}")
    return "\n".join(rules)


_BOX = re.compile(r'<g class="(node[^"]*)" data-node="([^"]*)"(.*?)</g>', re.DOTALL)


def _drawing(review: Review) -> str:
    """The draft drawn by ``graphs.drawing.to_svg`` (as ``sopgraph graph`` and the run page
    draw an SOP), each node box made a link to its first sentence, judgement steps marked."""
    if review.sop is None:
        return "<p class=muted id=nodrawing>no drawing: sop.yaml does not load (see the checks)</p>"
    from sopgraph.graphs.drawing import DrawingError, to_svg

    try:
        svg = to_svg(review.sop)
    except (DrawingError, ValueError) as exc:
        return f"<p class=muted id=nodrawing>no drawing: {_t(str(exc).splitlines()[0])}</p>"
    by_id = {n.id: n for n in review.nodes}
    known = {s.number for s in review.sentences}

    def link(m: re.Match[str]) -> str:
        node = by_id.get(html.unescape(m[2]))
        if node is None:  # an entry, or an edge's missing target
            return m[0]
        first = next((k for k in node.sentences if k in known), None)
        target = f"#s{first}" if first is not None else f"#n{node.index}"
        classes = m[1] + (" judgement" if node.judgement else "")
        cites = ", ".join(f"s{k}" for k in node.sentences) or "no sentence"
        tip = f"{node.id}: cites {cites}" + (f"; {node.why}" if node.judgement else "")
        return (
            f'<a href="{target}"><g id="n{node.index}" class="{classes}" data-node="{m[2]}"'
            f"{m[3]}<title>{_t(tip)}</title></g></a>"
        )

    # the drawing escapes markup but not bidi overrides or controls, which a document holds
    svg = printable(svg[svg.find("<svg") :], multiline=True)
    return "<div class=drawing>" + _BOX.sub(link, svg) + "</div>"


def _judgement(review: Review) -> str:
    rows = "".join(
        f"<tr class=judgement data-node='{_t(n.id)}'><td><a href='#n{n.index}'>{_t(n.id)}</a>"
        f"</td><td>{_t(n.text)}</td><td class=flag>{_t(n.judgement)}</td><td>{_t(n.why)}</td>"
        f"<td>{_cites(n.sentences)}</td></tr>"
        for n in review.judgement
    )
    if not rows:
        return "<h2>Judgement steps</h2><p id=judgement>None: data decides every decision.</p>"
    return (
        f"<h2>Judgement steps ({len(review.judgement)})</h2><p class=muted>No data decides "
        "these: a judge node answers them at run time, or a person does as an approval.</p>"
        "<table id=judgement><tr><th>node</th><th>text</th><th>flag</th><th>why</th>"
        f"<th>sentence</th></tr>{rows}</table>"
    )


def _unused(review: Review) -> str:
    items = "".join(
        f"<li class='unused {s.state}' data-sentence={s.number}><a href='#s{s.number}'>"
        f"{_t(s.cite)}</a>: {_t(s.text)}"
        + (" <span class=error>(not listed in draft.json's unused: a failed check)</span>"
           if s.state == "uncovered" else "")
        + "</li>"
        for s in review.unused
    )  # fmt: skip
    if not items:
        return (
            "<h2>Unused sentences</h2><p id=unused>None: a node cites every procedure sentence.</p>"
        )
    return (
        f"<h2>Unused sentences ({len(review.unused)})</h2><p class=muted>Procedure sentences no "
        "node encodes. Cite one on the node that encodes it (its <code>source:</code>), or keep "
        "it in draft.json's <code>unused</code>.</p>"
        f"<ul id=unused>{items}</ul>"
    )


def _cites(numbers: tuple[int, ...]) -> str:
    return " ".join(f"<a href='#s{k}'>s{k}</a>" for k in numbers) or "-"


def _nodes(review: Review) -> str:
    rows = "".join(
        f"<tr class=node-row data-node='{_t(n.id)}'><td><a href='#n{n.index}'>{_t(n.id)}</a></td>"
        f"<td>{_t(n.kind)}</td><td><code>sop.yaml:{n.line}</code></td><td>{_cites(n.sentences)}"
        f"</td><td>{_t(', '.join(n.data)) or '-'}</td><td class=flag>{_t(n.judgement)}</td></tr>"
        for n in review.nodes
    )
    return (
        f"<h2>Nodes ({len(review.nodes)})</h2><table id=nodes><tr><th>node</th><th>kind</th>"
        f"<th>line</th><th>cites</th><th>data</th><th>judgement</th></tr>{rows}</table>"
    )
