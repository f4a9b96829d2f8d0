"""The procedure's allowed outcome values as the document states them, found by structure.

Three shapes a document states them in, each read the same way in any SOP:

- a definitions list: list items ``TERM: meaning`` (or ``TERM - meaning``) under a heading or
  after a lead-in sentence that names an outcome;
- a table whose column header names an outcome: the column's values;
- an enumeration in the text: a sentence naming an outcome followed by two or more quoted
  values, or by ``one of A, B or C``.

"Names an outcome" is the general vocabulary of results (outcome, result, decision, verdict,
status, class, category, label, ...), not the words of one SOP.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sopgraph.graphs.drafting.document import Document, Sentence

_OUTCOME_WORDS = (
    r"outcomes?|results?|outputs?|decisions?|verdicts?|status(?:es)?|class(?:es)?|"
    r"categor(?:y|ies)|labels?|classifications?|dispositions?|resolutions?|answers?|"
    r"determinations?|ratings?|levels?|tiers?|recommendations?"
)
_NAMES_OUTCOME = re.compile(rf"\b({_OUTCOME_WORDS})\b", re.IGNORECASE)
_PHRASE = re.compile(rf"\b(?:([A-Za-z]+)\s+)?({_OUTCOME_WORDS})\b", re.IGNORECASE)
_DEFINITION = re.compile(r"^([^:=\u2013\u2014]{1,40}?)\s*(?::|\s[-\u2013\u2014=]\s)\s*(.+)$")
_QUOTED = re.compile(
    r"(?<!\w)[\"'`\u201c\u2018]([^\"'`\u201d\u2019]{1,40})[\"'`\u201d\u2019](?!\w)"
)
_ONE_OF = re.compile(r"\bone of[:\s]+(.+)$", re.IGNORECASE)
_STOP = {"the", "a", "an", "of", "its", "their", "this", "each", "final", "possible", "allowed",
         "following", "these", "valid", "is", "are", "be", "one", "and", "or", "to"}  # fmt: skip
MAX_TERM_WORDS = 5


@dataclass(frozen=True)
class Outcome:
    """One value the procedure may end in, with the output it is a value of."""

    field: str  # the output's name, e.g. hazard_class
    value: str
    sentence: int  # the sentence that states it


def slug(text: str, default: str = "outcome") -> str:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return "_".join(words)[:48] or default


def _field(text: str) -> str:
    """The output a heading or lead-in names: the outcome word and the word before it."""
    for m in _PHRASE.finditer(text):
        word = m[2].lower()
        word = re.sub(r"(ies)$", "y", word)
        # plurals to the singular; a word in -us is singular already (status, bonus)
        word = re.sub(r"(?<=[^su])s$|(?<=ss)es$|(?<=us)es$", "", word)
        before = (m[1] or "").lower()
        return slug(f"{before} {word}" if before and before not in _STOP else word)
    return "outcome"


def _term(text: str) -> str | None:
    """The defined term of a ``TERM: meaning`` item, or None."""
    m = _DEFINITION.match(text)
    if not m:
        return None
    term = m[1].strip().strip("\"'`")
    return term if 0 < len(term.split()) <= MAX_TERM_WORDS else None


def _from_lists(doc: Document) -> list[Outcome]:
    out: list[Outcome] = []
    for sec in doc.sections:
        lead = sec.title
        run: list[Sentence] = []
        for s in [*sec.sentences, None]:
            if s is not None and s.kind == "item":
                run.append(s)
                continue
            terms = [(i, _term(i.text)) for i in run]
            named = [(i, t) for i, t in terms if t]
            if len(named) >= 2 and _NAMES_OUTCOME.search(lead):
                field = _field(lead)
                out += [Outcome(field, t, i.number) for i, t in named]
            elif len(run) >= 2 and _NAMES_OUTCOME.search(lead) and lead.rstrip().endswith(":"):
                # a bare list after "The possible outcomes are:": the items are the values
                short = [i for i in run if len(i.text.split()) <= MAX_TERM_WORDS]
                if len(short) == len(run):
                    out += [Outcome(_field(lead), i.text.rstrip("."), i.number) for i in run]
            run = []
            if s is not None:
                lead = f"{s.text} {sec.title}"
    return out


def _from_tables(doc: Document) -> list[Outcome]:
    out: list[Outcome] = []
    for s in doc.sentences:
        if s.kind != "row" or not s.header:
            continue
        for h, c in zip(s.header, s.cells, strict=False):
            if _NAMES_OUTCOME.search(h) and c and len(c.split()) <= MAX_TERM_WORDS:
                out.append(Outcome(_field(h), c, s.number))
                break
    return out


def _from_text(doc: Document) -> list[Outcome]:
    out: list[Outcome] = []
    for s in doc.sentences:
        if s.kind != "text" or not (named := _NAMES_OUTCOME.search(s.text)):
            continue
        after = s.text[named.start() :]
        quoted = [q.strip() for q in _QUOTED.findall(after)]
        if len(quoted) >= 2:
            out += [Outcome(_field(s.text), q, s.number) for q in quoted]
            continue
        if m := _ONE_OF.search(after):
            items = [x.strip(" .;\"'`") for x in re.split(r",|\bor\b|\band\b", m[1])]
            items = [x for x in items if x and len(x.split()) <= MAX_TERM_WORDS]
            if len(items) >= 2:
                out += [Outcome(_field(s.text), x, s.number) for x in items]
    return out


def find_outcomes(doc: Document) -> list[Outcome]:
    """The outcome values ``doc`` states, first statement of each value kept, in text order.

    Example:
        >>> doc = read_text("## Outcomes\\n- Approved: all checks pass\\n- Rejected: any fails\\n", "x.md")
        >>> [o.value for o in find_outcomes(doc)]
        ['Approved', 'Rejected']
    """
    found = sorted(_from_lists(doc) + _from_tables(doc) + _from_text(doc), key=lambda o: o.sentence)
    seen: dict[str, Outcome] = {}
    for o in found:
        seen.setdefault(o.value.lower(), o)
    return list(seen.values())
