"""JSON schemas made safe for llama.cpp's grammars: what its converter cannot spell out is dropped.

The ``json-schema`` tool format (``_tool_format``) constrains a reply to each offered tool's
arguments schema; llama-cpp-python turns that schema into a grammar, and some schemas (long
length bounds, patterns with escapes) give one llama.cpp rejects or cannot hold. These are
taken out first; the tool itself still checks them.
"""

from __future__ import annotations

from typing import Any

MAX_GRAMMAR_REPEAT = 64
"""Length bounds above this are dropped from a schema before llama.cpp makes it a grammar."""


def grammar_safe(schema: Any) -> Any:
    """``schema`` without what llama-cpp-python cannot turn into a grammar llama.cpp accepts.

    - ``maxLength: 2000`` is spelt out as 2,000 nested optional characters: bounds above
      ``MAX_GRAMMAR_REPEAT`` are dropped.
    - ``pattern``: its regex converter wrote ``^P_\\d{5}$`` as a quoted literal with a ``\\d``
      escape, which llama.cpp rejects; the server then sampled with no grammar and segfaulted
      (SOP-Bench's dangerous_goods specs). ``\\d`` becomes ``[0-9]``; a pattern with any other
      escape is dropped.

    The tool still checks what is dropped.
    """
    if isinstance(schema, list):
        return [grammar_safe(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            out[key] = {
                name: grammar_safe(sub) for name, sub in value.items()
            }  # names, not keywords
            continue
        if key in ("maxLength", "maxItems", "minLength", "minItems") and (
            isinstance(value, int) and value > MAX_GRAMMAR_REPEAT
        ):
            continue
        if key == "pattern" and isinstance(value, str):
            value = value.replace("\\d", "[0-9]")
            if "\\" in value:  # another escape: its converter may write it into a literal
                continue
        out[key] = value if key in ("const", "enum", "default") else grammar_safe(value)
    return out
