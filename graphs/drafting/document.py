"""A written SOP document read into sections and numbered sentences, each with where it stands.

Markdown and plain text are read here, PDF and Word files in ``pdf_docx.py`` (the [draft]
extra); ``reader.read_document`` reads any of them by its suffix. A sentence keeps its file and line (a PDF: its page; a Word file: its paragraph), so a
drafted node can cite it. Each limit below is refused with one line before anything is drafted.

Example:
    >>> doc = read_text(open("sop.md").read(), "sop.md")  # doctest: +SKIP
    >>> doc.sentences[0].cite
    'sop.md:3 (s1)'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from sopgraph.graphs.drafting.words import opens_with_condition

MAX_BYTES = 20_000_000  # a 200-page text PDF is about 1-5 MB; Word files carry images
MAX_PAGES = 200  # an SOP runs to tens of pages; a manual holding many procedures is split first
MAX_SENTENCES = 3_000  # the drafting steps see a section at a time; this bounds their number
TEXT_SUFFIXES = (".md", ".markdown", ".txt", ".text", "")
DOC_SUFFIXES = (".pdf", ".docx")

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_UNDERLINE = re.compile(r"^(=+|-+)\s*$")
_ITEM = re.compile(r"^\s*(?:[-*+•]|\(?\d+(?:\.\d+)*[.)]|\(?[a-zA-Z][.)])\s+(.*)$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
# A sentence ends at . ! or ? before a space and a capital, a digit, a quote or a bracket;
# "e.g." and "i.e." do not end one.
_SENTENCE_END = re.compile(r"(?<![A-Za-z]\.[a-z])(?<=[.!?])\s+(?=[\"'(\[A-Z0-9])")
# Conditions and steps: what makes a sentence a procedure's rather than background.
_PROCEDURE = re.compile(
    r"\b(if|when|whenever|unless|otherwise|else|whether|then|until|once|must|should|"
    r"check|verify|determine|confirm|assign|classify|escalate|notify|approve|reject)\b",
    re.IGNORECASE,
)


class DocumentError(Exception):
    """A document sopgraph cannot draft from; the message is one line: what, where, the fix."""


@dataclass(frozen=True)
class Sentence:
    """One sentence, list item or table row of the document, numbered from 1."""

    number: int
    text: str
    file: str
    line: int  # the line (Markdown, text, a PDF page's line) or paragraph (Word)
    section: str
    kind: str = "text"  # text | item | row
    page: int | None = None
    header: tuple[str, ...] = ()  # a table row: its table's column names
    cells: tuple[str, ...] = ()
    indent: int = 0  # a list item's indentation: an item under another stands further in

    @property
    def where(self) -> str:
        if self.page is not None:
            return f"{self.file}:page {self.page}"
        return f"{self.file}:{self.line}"

    @property
    def cite(self) -> str:
        """What a node's ``source`` holds to cite this sentence: where and its number."""
        return f"{self.where} (s{self.number})"

    @property
    def procedural(self) -> bool:
        """Whether it reads as a step or a condition, not as background."""
        return self.kind == "item" or bool(_PROCEDURE.search(self.text))


@dataclass
class Section:
    title: str
    level: int
    line: int
    sentences: list[Sentence] = field(default_factory=list)


@dataclass
class Document:
    file: str
    sections: list[Section]
    pages: int | None = None

    @property
    def sentences(self) -> list[Sentence]:
        return [s for sec in self.sections for s in sec.sentences]

    @property
    def title(self) -> str:
        return next((s.title for s in self.sections if s.title), Path(self.file).stem)

    def sentence(self, number: int) -> Sentence | None:
        found = [s for s in self.sentences if s.number == number]
        return found[0] if found else None


@dataclass
class _Builder:
    """Collects blocks (line, text, kind) into sections and numbered sentences."""

    file: str
    sections: list[Section] = field(default_factory=list)
    count: int = 0

    def heading(self, title: str, level: int, line: int) -> None:
        self.sections.append(Section(_clean(title), level, line))

    def add(self, text: str, line: int, kind: str = "text", page: int | None = None,
            header: tuple[str, ...] = (), cells: tuple[str, ...] = (),
            indent: int = 0) -> None:  # fmt: skip
        if not self.sections:
            self.sections.append(Section("", 0, line))
        parts = [text] if kind == "row" else split_sentences(text)
        for part in parts:
            part = _clean(part)
            if not part or not re.search(r"\w", part):
                continue
            self.count += 1
            if self.count > MAX_SENTENCES:
                raise DocumentError(
                    f"{self.file}: more than {MAX_SENTENCES:,} sentences (a documented limit); "
                    "draft one procedure at a time: split the document"
                )
            sec = self.sections[-1]
            sec.sentences.append(
                Sentence(
                    self.count, part, self.file, line, sec.title, kind, page, header, cells, indent
                )
            )

    def document(self, pages: int | None = None) -> Document:
        doc = Document(self.file, [s for s in self.sections if s.sentences or s.title], pages)
        if not doc.sentences:
            raise DocumentError(f"{self.file}: the document holds no text; nothing to draft from")
        if not any(s.procedural for s in doc.sentences):
            raise DocumentError(
                f"{self.file}: holds no procedure (no step, list item or condition such as "
                "'if ...' in its text); give the document that states the SOP"
            )
        return doc


def scope_of(doc: Document, stated: set[int]) -> Sentence | None:
    """The document's opening statement, where it is background before every step ("The
    customer believes an extra charge has been added to their order."): it says when the
    procedure applies, so the draft's entry observes it and the steps follow on ``yes``. Where
    the steps are list items, the first sentence before them that opens with no condition;
    in prose, the first sentence where it reads as no step. None where the document opens with
    a step, a list, a table or a stated outcome."""
    first = doc.sentences[0] if doc.sentences else None
    if first is None or first.kind != "text" or first.number in stated:
        return None
    items = any(s.kind == "item" for s in doc.sentences)
    if items and not opens_with_condition(first.text):
        return first
    later = [s for s in doc.sentences[1:] if s.procedural and s.number not in stated]
    return first if not first.procedural and later else None


def split_sentences(text: str) -> list[str]:
    """``text`` cut into sentences (a paragraph's; list items and rows stay whole)."""
    return [p for p in _SENTENCE_END.split(" ".join(text.split())) if p.strip()]


def _clean(text: str) -> str:
    text = re.sub(r"[*_`]{1,3}([^*_`]+)[*_`]{1,3}", r"\1", text)  # **bold**, `code`
    return " ".join(text.split()).strip()


def _cells(line: str) -> tuple[str, ...]:
    return tuple(_clean(c) for c in line.strip().strip("|").split("|"))


def read_lines(lines: list[str], file: str, page: int | None = None,
               builder: _Builder | None = None, first_line: int = 1) -> _Builder:  # fmt: skip
    """Markdown or plain text lines into ``builder``: headings (``#``, underlined, or a short
    line ending in ':' before a list), list items, table rows and paragraphs."""
    b = builder or _Builder(file)
    para: list[str] = []
    para_line = 0
    header: tuple[str, ...] = ()

    def flush() -> None:
        nonlocal para
        if para:
            b.add(" ".join(para), para_line, page=page)
        para = []

    for i, raw in enumerate(lines):
        n = first_line + i
        line = raw.rstrip()
        nxt = lines[i + 1].rstrip() if i + 1 < len(lines) else ""
        if not line.strip():
            flush()
            header = ()
            continue
        if m := _HEADING.match(line):
            flush()
            b.heading(m[2], len(m[1]), n)
            continue
        if _UNDERLINE.match(nxt) and not para and len(line) < 100 and not line.startswith("|"):
            flush()
            b.heading(line, 1 if nxt.startswith("=") else 2, n)
            continue
        if _UNDERLINE.match(line) or _TABLE_RULE.match(line):
            continue
        if line.lstrip().startswith("|"):
            flush()
            cells = _cells(line)
            if _TABLE_RULE.match(nxt):
                header = cells
            else:
                text = "; ".join(
                    f"{h}: {c}" if h else c
                    for h, c in zip(header or ("",) * len(cells), cells, strict=False)
                )
                b.add(text, n, "row", page, header, cells)
            continue
        if m := _ITEM.match(line):
            flush()
            b.add(m[1], n, "item", page, indent=len(line) - len(line.lstrip()))
            continue
        if para and raw[:1].isspace() and b.sections and b.sections[-1].sentences:
            para.append(line.strip())  # an item's continuation
            continue
        if not para:
            para_line = n
        para.append(line.strip())
    flush()
    return b


def read_text(text: str, file: str) -> Document:
    """A Markdown or plain-text document from its text."""
    return read_lines(text.splitlines(), file).document()
