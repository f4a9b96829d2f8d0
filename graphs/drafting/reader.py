"""A written SOP document of any kind read by its suffix: Markdown, plain text, PDF or DOCX.

Example:
    >>> doc = read_document("sop.md")  # doctest: +SKIP
    >>> doc.sentences[0].cite
    'sop.md:3 (s1)'
"""

from __future__ import annotations

from pathlib import Path

from sopgraph.graphs.drafting.document import (
    DOC_SUFFIXES,
    MAX_BYTES,
    TEXT_SUFFIXES,
    Document,
    DocumentError,
    read_text,
)


def read_document(path: str | Path) -> Document:
    """The document at ``path``: Markdown, plain text, PDF or DOCX, by its suffix.

    Raises:
        DocumentError: not a readable regular file, too big, an unknown kind, no text (a
            scanned PDF), no procedure, or past a documented limit.
    """
    p = Path(path)
    name = p.name
    if not p.is_file():
        raise DocumentError(f"{path}: no such document (give a .md, .txt, .pdf or .docx file)")
    size = p.stat().st_size
    if size > MAX_BYTES:
        raise DocumentError(
            f"{name}: {size:,} bytes, over the {MAX_BYTES:,}-byte limit; split the procedure "
            "out into its own document"
        )
    suffix = p.suffix.lower()
    if suffix in DOC_SUFFIXES:
        from sopgraph.graphs.drafting import pdf_docx  # the [draft] extra, on first use

        return pdf_docx.read_pdf(p) if suffix == ".pdf" else pdf_docx.read_docx(p)
    if suffix not in TEXT_SUFFIXES:
        raise DocumentError(
            f"{name}: unknown document kind '{suffix}'; give Markdown (.md), text (.txt), "
            "PDF (.pdf) or Word (.docx)"
        )
    data = p.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DocumentError(f"{name}: not UTF-8 text; save it as UTF-8") from None
    if "\x00" in text:
        raise DocumentError(f"{name}: holds NUL bytes, not text; save it as UTF-8 text")
    return read_text(text, name)
