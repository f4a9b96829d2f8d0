"""No module of the installed package over 400 lines (issue 52): a module that long holds more
than one concept, and a reader no longer finds a concept by its file name.

A module allowed over the limit for a while goes on ``WAITING`` with the most lines it may
have until it is rewritten (the CodeAct modules were, until their generic loop replaced them);
one that has come under the limit must leave the list, so the list says what is left.
"""

from __future__ import annotations

from package_files import ROOT, package_modules

LIMIT = 400
WAITING: dict[str, int] = {}  # a module -> the most lines it may have until its rewrite


def _lines() -> dict[str, int]:
    sizes = {}
    for file in package_modules().values():
        rel = file.resolve().relative_to(ROOT).as_posix()
        if rel.startswith("examples/"):  # tool files of the example libraries, data
            continue
        sizes[rel] = len(file.read_text(encoding="utf-8").splitlines())
    return sizes


def test_no_module_is_over_400_lines():
    sizes = _lines()
    assert len(sizes) > 100  # the package's modules were found
    over = {m: n for m, n in sizes.items() if n > WAITING.get(m, LIMIT)}
    assert not over, (
        f"over {LIMIT} lines (or grown past their waiting size): {over}; split by concept"
    )


def test_the_waiting_list_is_only_what_is_still_over():
    sizes = _lines()
    done = {m: sizes.get(m) for m in WAITING if sizes.get(m, 0) <= LIMIT}
    assert not done, f"now at or under {LIMIT} lines (or gone): take them off WAITING: {done}"
