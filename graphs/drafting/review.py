"""A draft's review page (``review.md``) and drawing: what a reviewer reads before publishing."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from sopgraph.graphs.problems import SopError

if TYPE_CHECKING:
    from sopgraph.graphs.drafting.drafter import DraftResult


def drawing(text: str) -> str | None:
    """The draft as Mermaid (``sopgraph graph``'s drawing), or None when it does not load."""
    from sopgraph.graphs.drawing import to_mermaid
    from sopgraph.graphs.loader import load_sop_text

    try:
        return to_mermaid(load_sop_text(text, "sop.yaml", check=False)) + "\n"
    except (SopError, ValueError):
        return None


def review_page(result: DraftResult, model: str, document: str) -> str:
    """The review page: the failed checks, the judgement steps, unused and background
    sentences, parameters and outcomes, and what the draft cost."""
    from sopgraph.graphs.loader import load_sop_text

    facts, d = result.facts, result.draft
    today = dt.date.today().isoformat()
    out = [
        f"# Review: draft of {document}",
        "",
        f"Drafted {today} by `sopgraph draft` with model `{model}`; failed checks of the "
        f"candidates: {result.choice_line()} (the structural one is made without the model); "
        f"{result.repairs} repair round(s); cost: {result.cost.line()}.",
        "",
        "## Checks",
        "",
    ]
    out += [f"- `{p}`" for p in d.problems] or ["All checks pass: `sopgraph publish` accepts it."]
    try:
        sop = load_sop_text(d.text, "sop.yaml", check=False)
    except SopError:
        sop = None
    if sop is not None:
        judged = [n for n in sop.decision_nodes if not n.data and n.api is None]
        out += ["", "## Judgement steps (no data decides them)", ""]
        out += [
            f"- `{n.id}`: {n.text} — the model judges it at run time; or give it a tool "
            f"(`sopgraph tools add`) ({n.source.partition(') ')[0]}))"
            for n in judged
        ] or ["None: every decision names the data that decides it."]
        if sop.params:
            out += ["", "## Parameters (numbers the text compares against)", ""]
            out += [f"- `{k}` = {v}" for k, v in sop.params.items()]
    out += ["", "## Outcomes the document states", ""]
    out += [f"- {o.field}: {o.value} ({facts.cite(o.sentence)})" for o in facts.outcomes] or [
        "None found (no definitions list, table column or enumeration names an outcome)."
    ]
    unused = [s for s in facts.sentences if s.number in facts.unused]
    out += ["", "## Unused procedure sentences (no node encodes them)", ""]
    out += [f"- {s.cite}: {s.text}" for s in unused] or ["None."]
    background = [s for s in facts.sentences if not s.procedural]
    out += ["", "## Background sentences (not checked for coverage)", ""]
    out += [f"- {s.cite}: {s.text}" for s in background] or ["None."]
    return "\n".join(out) + "\n"
