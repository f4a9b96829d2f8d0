"""What a draft was made from, kept beside it as ``draft.json``: the document's sentences, its
stated outcomes, the catalog's names and the sentences a reviewer marked unused. The checks
read it again at ``sopgraph publish``, after the reviewer's edits."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from sopgraph.graphs.drafting.document import Document, scope_of
from sopgraph.graphs.drafting.outcomes import Outcome

FACTS_FILE = "draft.json"


class SentenceFact(BaseModel):
    model_config = ConfigDict(extra="forbid")
    number: int
    cite: str
    text: str
    procedural: bool


class OutcomeFact(BaseModel):
    model_config = ConfigDict(extra="forbid")
    field: str
    value: str
    sentence: int


class DraftFacts(BaseModel):
    """The document's facts a drafted SOP is checked against."""

    model_config = ConfigDict(extra="forbid")
    document: str
    sha256: str = ""
    sentences: list[SentenceFact] = Field(default_factory=list)
    outcomes: list[OutcomeFact] = Field(default_factory=list)
    # "server.tool" / "server.metric" / "server.table.column" names; None: no catalog given
    catalog: list[str] | None = None
    # sentences no node encodes, listed so that coverage holds; a reviewer edits this list
    unused: list[int] = Field(default_factory=list)
    # the opening statement the entry observes (``document.scope_of``): on its ``no`` the
    # procedure does not apply, so that verdict may lead nowhere
    scope: int | None = None
    # the candidate kept ("sample K", "structural", "... repaired") and each candidate's
    # failed checks; empty in a draft.json written before there were candidates
    chosen: str = ""
    candidates: dict[str, int] = Field(default_factory=dict)

    @classmethod
    def of(cls, doc: Document, outcomes: list[Outcome], catalog: list[str] | None,
           sha256: str = "") -> DraftFacts:  # fmt: skip
        return cls(
            document=doc.file,
            sha256=sha256,
            sentences=[
                SentenceFact(number=s.number, cite=s.cite, text=s.text, procedural=s.procedural)
                for s in doc.sentences
            ],
            outcomes=[
                OutcomeFact(field=o.field, value=o.value, sentence=o.sentence) for o in outcomes
            ],
            catalog=catalog,
            scope=getattr(scope_of(doc, {o.sentence for o in outcomes}), "number", None),
        )

    def cite(self, number: int) -> str:
        return next((s.cite for s in self.sentences if s.number == number), f"s{number}")
