"""The docstring of a file the tool-maker writes: a node's text as a Python literal.

A made tool file (``sampling.tool_file``) opens with the node's text, which anyone may write;
``docstring`` makes it a literal that always parses and reads back as the text.
"""

from __future__ import annotations

import re

from sopgraph.graphs.untrusted_text import printable

_CLOSING_QUOTE = re.compile(r'"(?="|\Z)')  # a quote before another, or the text's last


def docstring(text: str) -> str:
    """``text`` (a node's text, which anyone may write) as a triple-quoted Python literal that
    always parses and reads back as ``text``: the docstring of a file the tool-maker writes.

    Backslashes are doubled; what `printable` escapes (controls, separators, bidi, and lone
    surrogates, which no UTF-8 file holds) is written as its Python escape; a quote before
    another quote or at the end is escaped, so no three can close the literal early. Newlines
    and every other character stay as they are: the text still reads as written.

    Example:
        >>> print(docstring('Is it "paid"')[3:-3])  # inside the triple quotes
        Is it "paid\\"
    """
    body = printable(text.replace("\\", "\\\\"), multiline=True)
    return '"""' + _CLOSING_QUOTE.sub(r'\\"', body) + '"""'
