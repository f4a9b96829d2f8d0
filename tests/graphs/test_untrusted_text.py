"""Escaping text an untrusted party wrote before it is printed, logged or serialised."""

from __future__ import annotations

import json
import unicodedata

import pytest
from pydantic import BaseModel

from sopgraph.graphs.untrusted_text import printable, serialisable

# What a guest used on ef10995 to print a fake selftest line: erase the line, return, ring.
FORGED = "\x1b[2K\r\x1b[32mcontained 99/99\x1b[0m\x07\u2028done"


def _acts_on_a_terminal(text: str) -> list[str]:
    """Characters of ``text`` a terminal would act on or reorder, or UTF-8 cannot encode."""
    bidi = {"\u061c", "\u200e", "\u200f", *map(chr, range(0x202A, 0x202F)),
            *map(chr, range(0x2066, 0x206A))}  # fmt: skip
    return [
        c for c in text
        if unicodedata.category(c) in ("Cc", "Zl", "Zp", "Cs") or c in bidi
    ]  # fmt: skip


@pytest.mark.parametrize("code", [*range(0x20), 0x7F, *range(0x80, 0xA0), 0x2028, 0x2029,
                                  0x202E, 0x2066, 0x200F, 0x061C, 0xD800, 0xDFFF])  # fmt: skip
def test_every_control_is_escaped_on_one_line(code):
    out = printable(f"a{chr(code)}b")
    assert _acts_on_a_terminal(out) == []
    assert out.startswith("a\\") and out.endswith("b")
    assert out.encode("utf-8")  # a lone surrogate would raise here


def test_forged_selftest_line_stays_visible_text_on_its_line():
    out = printable(FORGED)
    assert out == "\\x1b[2K\\r\\x1b[32mcontained 99/99\\x1b[0m\\x07\\u2028done"
    assert printable(out) == out  # escaping twice changes nothing


def test_multiline_keeps_newlines_and_tabs_only():
    tb = "Traceback:\n\tFile x\r\x1b[31m\u2028"
    assert printable(tb, multiline=True) == "Traceback:\n\tFile x\\r\\x1b[31m\\u2028"
    assert printable(tb) == "Traceback:\\n\\tFile x\\r\\x1b[31m\\u2028"


def test_ordinary_text_is_returned_unchanged():
    text = "idle 31.2% > 25% — station «A» 東京 🙂 (ZWJ 👩\u200d💻)"
    assert printable(text) is text
    assert serialisable(text) is text
    assert printable(42) == "42"


class _Call(BaseModel):
    tool: str
    args: dict


def test_serialisable_replaces_lone_surrogates_everywhere_and_joins_pairs():
    value = {
        "sql\ud800": ["ok", ("x\udfff",), {"n": 1}],
        "pair": "\ud83d\ude00",  # a pair left split, as surrogatepass decoding leaves it
        "call": _Call(tool="q\udc80", args={"a": "\ud801"}),
        "ctl": "\x1b[2K",  # JSON escapes controls itself: data is kept as it is
    }
    out = serialisable(value)
    assert out["sql\ufffd"] == ["ok", ("x\ufffd",), {"n": 1}]
    assert out["pair"] == "😀" and out["ctl"] == "\x1b[2K"
    assert out["call"] == _Call(tool="q\ufffd", args={"a": "\ufffd"})
    assert value["call"].tool == "q\udc80"  # the input is not modified
    json.dumps(out, ensure_ascii=False, default=lambda m: m.model_dump()).encode("utf-8")
    with pytest.raises(UnicodeEncodeError):
        json.dumps(value, ensure_ascii=False, default=lambda m: m.model_dump()).encode("utf-8")


def test_serialisable_returns_the_same_objects_when_nothing_changes():
    value = {"a": ["b", {"c": ("d",)}], "m": _Call(tool="t", args={})}
    assert serialisable(value) is value
