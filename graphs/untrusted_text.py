"""Text an untrusted party wrote (sandboxed code, a model, an MCP server), made safe to show.

`printable` is for what a terminal or a log receives: it escapes C0 and C1 controls, DEL, the
Unicode line and paragraph separators, bidi overrides and lone surrogates, so such text can
neither move the cursor, recolour, ring, overwrite a line (CR) nor start a new one.
`serialisable` is for data that is written as JSON or UTF-8: it replaces lone surrogates (which
no UTF-8 encoder accepts) and leaves everything else as it was; JSON escapes controls itself.
`json_text` is for JSON printed for a person or a pipe (``--json``): readable non-ASCII text,
with every character `printable` escapes written as a ``\\uXXXX`` escape, so the text is still
JSON that loads back to the same strings.

Example:
    >>> printable("not found: \\x1b[2K\\rcontained 99/99\\x07")
    'not found: \\\\x1b[2K\\\\rcontained 99/99\\\\x07'
    >>> serialisable({"sql": "x\\ud800"})
    {'sql': 'x\ufffd'}
    >>> print(json_text({"name": "caf\\u00e9 \\u202e"}, indent=None))
    {"name": "caf\u00e9 \\u202e"}
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

# Bidi controls: embeddings and overrides (U+202A-U+202E), isolates (U+2066-U+2069), the marks
# (U+200E, U+200F, U+061C). They reorder what follows on the line, so text can hide in it.
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_UNSAFE = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{_BIDI}\ud800-\udfff]")
_UNSAFE_KEEP_LINES = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029{_BIDI}\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: object, *, multiline: bool = False) -> str:
    """``text`` with every character that could act on a terminal written as an escape.

    Args:
        text: what the untrusted party wrote (anything else is shown through ``str``).
        multiline: keep newlines and tabs, for a field printed as a block (a traceback);
            a one-line field (a reason, an error line) escapes them too.
    """
    text = text if isinstance(text, str) else str(text)
    pattern = _UNSAFE_KEEP_LINES if multiline else _UNSAFE
    return pattern.sub(_escape, text) if pattern.search(text) else text


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def json_text(
    value: Any, *, indent: int | None = 2, default: Callable[[Any], Any] | None = None
) -> str:
    """``value`` as JSON text that no terminal acts on and that loads back to ``value``.

    Non-ASCII text stays readable; the characters `printable` escapes are written as JSON
    ``\\uXXXX`` escapes (a lone surrogate too, so the text always encodes as UTF-8). JSON
    escapes C0 controls itself, and outside its strings it writes only ASCII, spaces and
    (with ``indent``) newlines, so every escape made here is inside a string.

    Args:
        value: what ``json.dumps`` takes; a pydantic model is dumped in its JSON mode.
        indent: as for ``json.dumps``.
        default: as for ``json.dumps``: what an object it cannot encode becomes.
    """
    if hasattr(value, "model_dump") and hasattr(type(value), "model_fields"):
        value = value.model_dump(mode="json")
    text = json.dumps(value, indent=indent, default=default, ensure_ascii=False)
    # newlines and tabs are never raw inside a JSON string: what remains raw is structure
    return _UNSAFE_KEEP_LINES.sub(_json_escape, text)


def serialisable(value: T) -> T:
    """``value`` with lone surrogates replaced by U+FFFD in every string, keys included.

    Walks dicts, lists and tuples (and pydantic models' fields); anything else is returned as
    it is. A valid pair of surrogates (text decoded with ``surrogatepass``) becomes the one
    character it encodes. Nothing is copied when no string needs a change.
    """
    return _clean(value)


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        if not _SURROGATE.search(value):
            return value
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if isinstance(value, dict):
        out, changed = {}, False
        for k, v in value.items():
            k2, v2 = _clean(k), _clean(v)
            changed = changed or k2 is not k or v2 is not v
            out[k2] = v2
        return out if changed else value
    if isinstance(value, list | tuple):
        items = [_clean(v) for v in value]
        if all(a is b for a, b in zip(value, items, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)
    fields = getattr(type(value), "model_fields", None)
    if fields is not None and hasattr(value, "model_copy"):
        update = {n: _clean(getattr(value, n)) for n in fields}
        changed = {n: v for n, v in update.items() if v is not getattr(value, n)}
        return value.model_copy(update=changed) if changed else value
    return value
