"""Parse an agent's final text into the domain's output columns (XML tags, else ``column: value``)."""

from __future__ import annotations

import html
import re


def _tag_pattern(name: str) -> re.Pattern[str]:
    # "final status", "final_status" and "final-status" name the same tag
    words = [re.escape(w) for w in re.split(r"[\s_-]+", name.strip()) if w]
    tag = r"[\s_-]*".join(words)
    return re.compile(rf"<\s*{tag}\s*>(.*?)<\s*/\s*{tag}\s*>", re.IGNORECASE | re.DOTALL)


def _clean(value: str) -> str:
    return " ".join(value.strip().strip("\"'").split())


def parse_answer(text: str, columns: list[str]) -> dict[str, str] | None:
    """Every column's value from ``text``, or None when some column has no value.

    A column is read from its XML tag (the last one wins: models restate), else from a
    ``column: value`` line. A single-column domain also takes ``<final_decision>``, the tag
    several SOPs ask for whatever the column is called.
    """
    # llama-cpp-python's function-calling chat format HTML-escapes replies (&lt;tag&gt;)
    text = html.unescape(text)
    out: dict[str, str] = {}
    for col in columns:
        hits = _tag_pattern(col).findall(text)
        if not hits and len(columns) == 1:
            hits = _tag_pattern("final_decision").findall(text)
        if not hits:
            words = r"[\s_-]*".join(re.escape(w) for w in re.split(r"[\s_-]+", col) if w)
            hits = re.findall(rf"(?im)^\W*{words}\W*\s*[:=]\s*(.+?)\s*$", text)
        if not hits:
            return None
        out[col] = _clean(hits[-1])
    return out
