"""PDF (pypdf) and Word (python-docx) documents read into the same sections and sentences.

Both libraries are the [draft] extra; a missing one raises ModuleNotFoundError, which the shell
turns into its one-line install message.
"""

from __future__ import annotations

from pathlib import Path

from sopgraph.graphs.drafting.document import (
    MAX_PAGES,
    Document,
    DocumentError,
    _Builder,
    read_lines,
)


def read_pdf(path: Path) -> Document:
    """A PDF's text, page by page; each sentence cites its page."""
    import pypdf

    try:
        reader = pypdf.PdfReader(str(path))
        pages = len(reader.pages)
    except pypdf.errors.PdfReadError as exc:
        raise DocumentError(f"{path.name}: not a readable PDF ({exc}); export it again") from None
    if pages > MAX_PAGES:
        raise DocumentError(
            f"{path.name}: {pages} pages, over the {MAX_PAGES}-page limit (a documented limit); "
            "split the procedure out into its own document"
        )
    b = _Builder(path.name)
    for number, page in enumerate(reader.pages, start=1):
        text = page.extract_text() or ""
        read_lines(text.splitlines(), path.name, page=number, builder=b)
    if b.count == 0:
        raise DocumentError(
            f"{path.name}: {pages} page{'s' if pages != 1 else ''} and no text (a scanned PDF?); "
            "run OCR on it or export it with its text layer"
        )
    return b.document(pages)


def read_docx(path: Path) -> Document:
    """A Word file's paragraphs and tables in order; headings by their style, list items by
    theirs; each sentence cites its paragraph number."""
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    try:
        d = docx.Document(str(path))
    except Exception as exc:  # noqa: BLE001 - python-docx raises zipfile, KeyError, lxml errors
        raise DocumentError(
            f"{path.name}: not a readable Word file ({exc}); save it as .docx"
        ) from None
    b = _Builder(path.name)
    for n, block in enumerate(d.iter_inner_content(), start=1):
        if isinstance(block, Table):
            rows = [tuple(" ".join(c.text.split()) for c in r.cells) for r in block.rows]
            if not rows:
                continue
            header = rows[0]
            for row in rows[1:]:
                text = "; ".join(f"{h}: {c}" if h else c for h, c in zip(header, row, strict=False))
                b.add(text, n, "row", header=header, cells=row)
            continue
        assert isinstance(block, Paragraph)
        text = block.text.strip()
        style = (block.style.name if block.style is not None else "") or ""
        if not text:
            continue
        if style.startswith("Heading") or style == "Title":
            level = int(style.split()[-1]) if style.split()[-1].isdigit() else 1
            b.heading(text, level, n)
        elif "List" in style:
            b.add(text, n, "item")
        else:
            read_lines([text], path.name, builder=b, first_line=n)
    return b.document()
