"""What a draft's review page in ``sopgraph ui`` shows, read from the draft folder's files alone
(``sop.yaml``, ``draft.json``): the document's sentences, each with the nodes that cite it; the
nodes, each with the sentences it cites and whether no data decides it (a judgement step); the
unused sentences; and the failed checks, run again as ``sopgraph publish`` runs them, so a
reviewer's edits show on the next reload. No HTML here (``mcp_servers/console_review.py``
draws it).

Example:
    >>> review = read_review(Path("drafts/service"))
    >>> [s.cite for s in review.unused]
    ['sop.md:3 (s1)']
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from sopgraph.graphs.drafting.checks import check_draft
from sopgraph.graphs.drafting.facts import FACTS_FILE, DraftFacts
from sopgraph.graphs.model import Sop
from sopgraph.graphs.problems import Problem, SopError

SOP_FILE = "sop.yaml"
_CITED = re.compile(r"\(s(\d+)\)")  # a source's sentence citation, as checks.cited reads it


class ReviewError(Exception):
    """A folder that is not a readable draft; one line: what, where, how to fix."""


@dataclass(frozen=True)
class SentenceRow:
    """One sentence of the document and what the draft made of it."""

    number: int
    cite: str  # "sop.md:14 (s5)"
    text: str
    procedural: bool  # background sentences are not checked for coverage
    nodes: tuple[str, ...]  # the node ids whose source cites it
    listed_unused: bool  # in draft.json's ``unused``

    @property
    def state(self) -> str:
        """``cited``, ``unused`` (listed as such), ``uncovered`` (a procedure sentence neither
        cited nor listed: the coverage check fails on it) or ``background``."""
        if self.nodes:
            return "cited"
        if self.listed_unused:
            return "unused"
        return "uncovered" if self.procedural else "background"


@dataclass(frozen=True)
class NodeRow:
    """One node of the draft, with where it stands in ``sop.yaml`` and what it cites."""

    index: int  # its place in sop.yaml, for the page's anchors (ids can hold anything)
    id: str
    kind: str
    text: str
    line: int  # its line in sop.yaml
    sentences: tuple[int, ...]
    data: tuple[str, ...]
    judgement: str  # "judge": a decision no data decides; "approval": a person approves; ""

    @property
    def why(self) -> str:
        if self.judgement == "judge":
            return (
                "no data decides it: the model judges it at run time; give it a data: hint "
                "(sopgraph draft --data) and a tool (sopgraph tools make, or tools add)"
            )
        if self.judgement == "approval":
            return "a person approves it before it runs (approval: required)"
        return ""


@dataclass
class Review:
    """A draft folder as its review page shows it."""

    folder: Path
    document: str
    sop_id: str
    title: str
    chosen: str  # the candidate kept ("structural", "sample 1 repaired", ...)
    sentences: list[SentenceRow]
    nodes: list[NodeRow]
    problems: list[Problem]  # every failed check, file:line as `sopgraph validate` prints
    sop: Sop | None = None  # None: sop.yaml does not load (its problems say why)
    outcomes: list[tuple[str, str, int]] = field(default_factory=list)  # field, value, sentence

    @property
    def unused(self) -> list[SentenceRow]:
        """The procedure sentences no node encodes: listed as unused, or not covered at all."""
        return [s for s in self.sentences if s.state in ("unused", "uncovered")]

    @property
    def judgement(self) -> list[NodeRow]:
        return [n for n in self.nodes if n.judgement]

    def node(self, node_id: str) -> NodeRow | None:
        return next((n for n in self.nodes if n.id == node_id), None)


def read_review(folder: Path) -> Review:
    """The review of the draft in ``folder``, its checks run again on the files as they are.

    Raises:
        ReviewError: ``folder`` holds no draft (no sop.yaml or draft.json, or a draft.json
            that is not a draft's).
    """
    sop_file, facts_file = folder / SOP_FILE, folder / FACTS_FILE
    if not folder.is_dir():
        raise ReviewError(f"{folder}: no such folder; `sopgraph draft DOC -o DIR` writes a draft")
    if not sop_file.is_file() or not facts_file.is_file():
        raise ReviewError(f"{folder}: not a draft folder (needs {SOP_FILE} and {FACTS_FILE}; "
                          "`sopgraph draft DOC -o DIR` writes one)")  # fmt: skip
    try:
        facts = DraftFacts.model_validate_json(facts_file.read_text(encoding="utf-8"))
        text = sop_file.read_text(encoding="utf-8")
    except (ValueError, OSError) as exc:  # pydantic's ValidationError and UnicodeError too
        first = str(exc).splitlines()[0]
        raise ReviewError(f"{facts_file}: not a draft's facts ({first}); draft again") from None
    problems = check_draft(text, str(sop_file), facts)
    sop, nodes = _nodes(text, str(sop_file))
    citing: dict[int, list[str]] = {}
    for n in nodes:
        for number in n.sentences:
            citing.setdefault(number, []).append(n.id)
    unused = set(facts.unused)
    sentences = [
        SentenceRow(
            s.number,
            s.cite,
            s.text,
            s.procedural,
            tuple(citing.get(s.number, ())),
            s.number in unused,
        )  # fmt: skip
        for s in sorted(facts.sentences, key=lambda s: s.number)
    ]
    return Review(
        folder=folder,
        document=facts.document,
        sop_id=sop.id if sop else "",
        title=(sop.title or sop.id) if sop else folder.name,
        chosen=facts.chosen,
        sentences=sentences,
        nodes=nodes,
        problems=problems,
        sop=sop,
        outcomes=[(o.field, o.value, o.sentence) for o in facts.outcomes],
    )


def _nodes(text: str, file: str) -> tuple[Sop | None, list[NodeRow]]:
    """The SOP as the loader reads it (unvalidated: the checks report what is wrong) and its
    nodes; none when the YAML does not load at all."""
    from sopgraph.graphs.loader import load_sop_text
    from sopgraph.graphs.yaml_lines import parse_yaml

    try:
        sop = load_sop_text(text, file, check=False)
        _, lines = parse_yaml(text, file)
    except SopError:
        return None, []
    rows = []
    for i, node in enumerate(sop.nodes.values()):
        if node.is_action:
            judgement = "approval" if node.approval == "required" else ""
        else:  # the rule review.md's judgement steps follow
            judgement = "judge" if not node.data and node.api is None else ""
        rows.append(
            NodeRow(
                index=i,
                id=node.id,
                kind=node.kind,
                text=node.text or node.title,
                line=lines.node(node.id),
                sentences=tuple(dict.fromkeys(int(m) for m in _CITED.findall(node.source))),
                data=tuple(node.data),
                judgement=judgement,
            )
        )
    return sop, rows
