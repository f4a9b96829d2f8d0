"""A node's text goes into a tool-maker file's docstring as a literal that always parses and
reads back as the text (issue 53, finding 3): a text ending in a quote, holding triple quotes,
backslashes, controls or lone surrogates gave a file that did not parse, or lost its backslashes."""

from __future__ import annotations

import ast

import pytest

from sopgraph.tools.jailed import spec_data
from sopgraph.tools.toolmaker.demos import canonical
from sopgraph.tools.toolmaker.docstring import docstring
from sopgraph.tools.toolmaker.sampling import tool_file

SPEC = {
    "measures": {"paid": {"server": "shop", "table": "orders", "column": "paid",
                          "where": {"order_id": "$order_id"}}},
    "value": "paid", "op": ">=", "threshold": "min_paid",
}  # fmt: skip
NASTY = [
    'Is the order "paid"',  # ends in a quote: four quotes in a row before
    'a ""',
    '"',
    '""""""',
    'say """ then \'\'\' then """',
    "C:\\path\\to\\file\\",  # backslashes, one at the very end
    "\\N{BULLET} \\x41 \\u0041 \\'",  # escapes that must stay text
    "line one\nline two\r\n\ttabbed",
    "nul \x00 esc \x1b[2K bell \x07 del \x7f csi \x9b",
    "ls \u2028 ps \u2029 rlo \u202e isolate \u2066",
    "lone \ud800 and \udfff surrogates",
    "caf\u00e9 \u2265 25% \u2192 ok",
    "{braces} and {{doubled}} and %s",
    "x" * 500 + '"',  # cut at 400: the cut must not strand a quote either
]


@pytest.mark.parametrize("text", NASTY)
def test_the_docstring_literal_reads_back_as_the_text(text):
    literal = docstring(text)
    assert literal.startswith('"""') and literal.endswith('"""')
    assert literal.encode("utf-8")  # a lone surrogate is an escape, not a raw character
    assert ast.literal_eval(literal) == text


@pytest.mark.parametrize("text", NASTY)
def test_a_spec_tool_file_parses_and_its_spec_reloads(text):
    source = tool_file("obs_paid", text, SPEC).encode("utf-8")
    tree = ast.parse(source)
    shown = " ".join(text.split())[:400]
    assert ast.get_docstring(tree, clean=False) == (
        f"obs_paid (made by the tool-maker as a spec): {shown}"
    )
    assert spec_data(source) == canonical(SPEC)
