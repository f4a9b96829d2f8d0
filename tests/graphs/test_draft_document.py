"""Reading SOP documents (Markdown, text, PDF, Word), their outcomes and compared numbers."""

from __future__ import annotations

import sys

import pytest

from sopgraph.cli import main
from sopgraph.graphs.drafting.document import (
    MAX_PAGES,
    DocumentError,
    read_text,
)
from sopgraph.graphs.drafting.numbers import find_comparisons, with_placeholders
from sopgraph.graphs.drafting.outcomes import find_outcomes
from sopgraph.graphs.drafting.reader import read_document

MARKDOWN = """# Refund check

Refunds are requested by customers through the portal.

## Steps

1. Check whether the order was delivered more than 30 days ago.
2. If it was, reject the refund.
3. Otherwise approve it. Tell the customer.

## Decisions

- Approved: the refund is paid.
- Rejected: the refund is refused.
"""


def _pdf(pages: list[str]) -> bytes:
    """A minimal PDF with one line of Helvetica text a page (an empty string: no text)."""
    objs = ["<< /Type /Catalog /Pages 2 0 R >>", ""]
    kids = []
    for text in pages:
        content = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET" if text else ""
        page_no, content_no = len(objs) + 1, len(objs) + 2
        kids.append(f"{page_no} 0 R")
        objs.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {content_no} 0 R "
                    "/Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >>")  # fmt: skip
        objs.append(f"<< /Length {len(content)} >>\nstream\n{content}\nendstream")
    objs[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>"
    out, offsets = b"%PDF-1.4\n", []
    for i, body in enumerate(objs, start=1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


def test_markdown_sections_and_numbered_sentences_with_lines():
    doc = read_text(MARKDOWN, "refund.md")
    assert [s.title for s in doc.sections] == ["Refund check", "Steps", "Decisions"]
    texts = [(s.cite, s.kind, s.text) for s in doc.sentences]
    assert texts[1] == ("refund.md:7 (s2)", "item",
                        "Check whether the order was delivered more than 30 days ago.")  # fmt: skip
    # an item of two sentences is two numbered sentences on the same line
    assert texts[3][2] == "Otherwise approve it." and texts[4][2] == "Tell the customer."
    assert texts[3][0] == "refund.md:9 (s4)" and texts[4][0] == "refund.md:9 (s5)"
    assert not doc.sentences[0].procedural and doc.sentences[1].procedural


def test_outcomes_from_a_definitions_list():
    outcomes = find_outcomes(read_text(MARKDOWN, "refund.md"))
    assert [(o.field, o.value) for o in outcomes] == [
        ("decision", "Approved"),
        ("decision", "Rejected"),
    ]


def test_outcomes_from_a_table_column():
    text = (
        "# Triage\n\nIf the score is at least 5, escalate.\n\n"
        "| Score | Priority level |\n|---|---|\n| 1-4 | Low |\n| 5-9 | High |\n"
    )
    outcomes = find_outcomes(read_text(text, "t.md"))
    assert [(o.field, o.value) for o in outcomes] == [
        ("priority_level", "Low"),
        ("priority_level", "High"),
    ]


def test_outcomes_from_an_enumeration_in_the_text():
    text = (
        'Check the shipment. The final status is one of "Cleared", "Held" or "Returned".\n\n'
        "If the label is torn, the risk category is one of: minor, major or critical.\n"
    )
    values = [o.value for o in find_outcomes(read_text(text, "s.txt"))]
    assert values == ["Cleared", "Held", "Returned", "minor", "major", "critical"]


def test_no_outcomes_when_the_document_states_none():
    assert find_outcomes(read_text("If the door is open, close it.\n", "d.txt")) == []


def test_plain_text_with_underlined_headings(tmp_path):
    path = tmp_path / "sop.txt"
    path.write_text(
        "Alarm handling\n==============\n\nIf the alarm sounds, call the on-call engineer.\n"
    )
    doc = read_document(path)
    assert doc.sections[0].title == "Alarm handling"
    assert doc.sentences[0].cite == "sop.txt:4 (s1)"


def test_a_document_with_no_procedure_is_one_line(tmp_path):
    path = tmp_path / "news.md"
    path.write_text("# News\n\nThe team moved to a new building. Lunch is at noon.\n")
    with pytest.raises(DocumentError, match=r"^news\.md: holds no procedure"):
        read_document(path)


def test_unreadable_text_is_one_line(tmp_path):
    path = tmp_path / "latin.txt"
    path.write_bytes("If the caf\xe9 is closed, wait.".encode("latin-1"))
    with pytest.raises(DocumentError, match="not UTF-8"):
        read_document(path)
    with pytest.raises(DocumentError, match="unknown document kind"):
        read_document(tmp_path.joinpath("x.rtf").write_text("x") and tmp_path / "x.rtf")


def test_pdf_sentences_cite_their_page(tmp_path):
    path = tmp_path / "sop.pdf"
    path.write_bytes(_pdf(["Check the valve pressure.", "If it is above 5 bar, close the valve."]))
    doc = read_document(path)
    assert [(s.where, s.text) for s in doc.sentences] == [
        ("sop.pdf:page 1", "Check the valve pressure."),
        ("sop.pdf:page 2", "If it is above 5 bar, close the valve."),
    ]


def test_a_scanned_pdf_with_no_text_is_one_line(tmp_path):
    path = tmp_path / "scan.pdf"
    path.write_bytes(_pdf(["", ""]))
    with pytest.raises(DocumentError, match=r"^scan\.pdf: 2 pages and no text \(a scanned PDF\?\)"):
        read_document(path)


def test_a_300_page_pdf_is_past_the_documented_limit(tmp_path):
    path = tmp_path / "manual.pdf"
    path.write_bytes(_pdf(["If x, do y."] * 300))
    with pytest.raises(DocumentError, match=rf"300 pages, over the {MAX_PAGES}-page limit"):
        read_document(path)


def test_docx_headings_list_items_and_tables(tmp_path):
    import docx

    d = docx.Document()
    d.add_heading("Dock alarm", level=1)
    d.add_paragraph("Check the dock door sensor.", style="List Number")
    d.add_paragraph("If the door is open, close it and notify the lead.", style="List Number")
    table = d.add_table(rows=3, cols=2)
    for row, (a, b) in zip(
        table.rows, [("Case", "Result"), ("closed", "Cleared"), ("stuck", "Escalated")], strict=True
    ):
        row.cells[0].text, row.cells[1].text = a, b
    path = tmp_path / "dock.docx"
    d.save(str(path))
    doc = read_document(path)
    assert doc.sections[0].title == "Dock alarm"
    assert [s.kind for s in doc.sentences] == ["item", "item", "row", "row"]
    assert [o.value for o in find_outcomes(doc)] == ["Cleared", "Escalated"]


def test_a_missing_draft_extra_is_the_one_line_install_message(tmp_path, monkeypatch, capsys):
    path = tmp_path / "sop.pdf"
    path.write_bytes(_pdf(["Check the valve."]))
    monkeypatch.setitem(sys.modules, "pypdf", None)
    assert main(["draft", str(path), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(
        "error: sopgraph draft needs reading PDF and Word documents from the [draft] extra"
    )
    assert len(err.splitlines()) == 1 and not (tmp_path / "out").exists()


def test_compared_numbers_become_parameters_in_the_text():
    text = (
        "If the idle time is more than 25% or the queue is below 3, and between 2 and 8 robots wait"
    )
    comps = find_comparisons(text, 7, set())
    # named for the clause before the number, else the words after it ("... 8 robots wait")
    assert [(c.name, c.value) for c in comps] == [
        ("idle_time_min", 25),
        ("queue_max", 3),
        ("robots_wait_low", 2),
        ("robots_wait_high", 8),
    ]
    filled = with_placeholders(text, comps)
    assert filled.startswith(
        "If the idle time is more than {idle_time_min}% or the queue is below {queue_max}"
    )
    assert "between {robots_wait_low} and {robots_wait_high} robots" in filled


def test_a_repeated_parameter_name_gets_its_sentence_number():
    taken: set[str] = set()
    first = find_comparisons("The wait is more than 10 minutes.", 1, taken)
    second = find_comparisons("The wait is more than 20 minutes.", 2, taken)
    assert first[0].name != second[0].name and second[0].name.endswith("_s2")


def test_stated_ops_reads_the_comparison_a_text_states_for_each_parameter():
    from sopgraph.graphs.drafting.numbers import stated_ops

    text = (
        "The amount is above {max_refund}. Retried {tries} or more times, at most {cap}% of "
        "the plan, no more than {n} robots; cleaned within the last {hours} hours; not below "
        "{floor}; more than {both} and less than {both}."
    )
    assert stated_ops(text) == {"max_refund": ">", "tries": ">=", "cap": "<=", "n": "<="}
    # a window ("within the last"), a negation and a parameter stated two ways say nothing
