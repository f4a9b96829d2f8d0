"""``--json`` output escapes what a tool wrote that a terminal would act on (issue 53, finding 1):
line and paragraph separators, bidi controls, C1 controls, DEL and lone surrogates are JSON
``\\uXXXX`` escapes, and the output still loads back to the very strings the run holds."""

from __future__ import annotations

import json
import unicodedata

import pytest
from sop_factory import make_sop

from sopgraph.cli import main
from sopgraph.graphs.untrusted_text import json_text

# what a tool's result may carry: separators, RLO, an isolate, CSI (C1), DEL; é stays readable
NASTY = "a\u2028b\u2029c\u202ed\u2066e\u009bf\u007fg\u00e9"
SOP = {"id": "nasty", "entry": {"alarm": ["check"]},
       "nodes": {"check": {"kind": "observation", "text": "check", "next": {"true": ["rc"]}},
                 "rc": {"kind": "action", "text": "log it"}}}  # fmt: skip
TOOL = f"return Verdict(value=True, observed={NASTY!r}, explanation={NASTY!r})"


def _raw_unsafe(text: str) -> list[str]:
    """Characters of ``text`` a terminal acts on or reorders (newlines aside: JSON's layout)."""
    bidi = {"\u061c", "\u200e", "\u200f", *map(chr, range(0x202A, 0x202F)),
            *map(chr, range(0x2066, 0x206A))}  # fmt: skip
    return [
        c for c in text
        if c != "\n" and (unicodedata.category(c) in ("Cc", "Zl", "Zp", "Cs") or c in bidi)
    ]  # fmt: skip


def _cli(capsys, *argv: object) -> tuple[int, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return rc, out


@pytest.fixture
def ran(tmp_path, monkeypatch, capsys) -> tuple[str, str]:
    """A run whose tool observed ``NASTY``: its ``run --json`` output and its checkpoint."""
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SOPGRAPH_MODEL", raising=False)
    sop = make_sop(tmp_path / "nasty", SOP, {"check": TOOL})
    db = tmp_path / "runs.db"
    rc, out = _cli(capsys, "run", sop, "-i", '{"type": "alarm"}', "--thread", "t1",
                   "--checkpoint", db, "--json")  # fmt: skip
    assert rc == 0
    return out, str(db)


def test_run_json_escapes_terminal_controls_and_round_trips(ran):
    out, _ = ran
    assert _raw_unsafe(out) == []
    assert "\u00e9" in out  # non-ASCII text is not escaped: only what acts on a terminal
    step = next(s for s in json.loads(out)["trail"] if s["node"] == "check")
    assert step["observed"] == NASTY


def test_runs_show_json_escapes_terminal_controls_and_round_trips(ran, capsys):
    _, db = ran
    rc, out = _cli(capsys, "runs", "show", "t1", "--checkpoint", db, "--json")
    assert rc == 0 and _raw_unsafe(out) == []
    record = json.loads(out)
    assert record["result"]["verdicts"]["check"]["explanation"] == NASTY
    rc, out = _cli(capsys, "runs", "list", "--checkpoint", db, "--json")
    assert rc == 0 and _raw_unsafe(out) == [] and json.loads(out)[0]["thread_id"] == "t1"


@pytest.mark.parametrize("code", [*range(0x20), 0x7F, *range(0x80, 0xA0), 0x2028, 0x2029,
                                  0x202E, 0x2066, 0x200F, 0x061C, 0xD800, 0xDFFF])  # fmt: skip
def test_json_text_escapes_each_unsafe_character_and_loads_back(code):
    value = {f"k{chr(code)}": [f"a{chr(code)}b", 1, None]}
    for indent in (2, None):
        out = json_text(value, indent=indent)
        assert _raw_unsafe(out) == []
        assert out.encode("utf-8")  # a lone surrogate is an escape, never a raw character
        assert json.loads(out) == value
