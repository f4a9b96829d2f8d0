"""Each finished item of a long command: a line on stderr when it is a pipe or a log, a bar on
a terminal (stdout stays the command's result either way)."""

from __future__ import annotations

import io

from sopgraph import progress
from sopgraph.progress import per_item


def test_a_line_each_item_when_stderr_is_not_a_terminal(capsys):
    with per_item("dom fc", 2, lambda r, i, n: f"  task {i}/{n} {r}", str.upper) as shown:
        shown("t1", 1, 2)
        shown("t2", 2, 2)
    captured = capsys.readouterr()
    assert captured.err.splitlines() == ["  task 1/2 t1", "  task 2/2 t2"]
    assert captured.out == ""


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_bar_on_a_terminal_reads_the_last_item(monkeypatch):
    term = _Terminal()
    monkeypatch.setattr(progress.sys, "stderr", term)
    seen = []
    real = progress.progress_bar

    def bar(enabled):
        b = real(enabled)
        seen.append(b)
        return b

    monkeypatch.setattr(progress, "progress_bar", bar)
    with per_item("dom fc", 3, lambda r, i, n: "never a line", lambda r: f"{r} ok") as shown:
        shown("t1", 1, 3)
        shown("t2", 2, 3)
        (task,) = seen[0].tasks
        assert (task.completed, task.total, task.description) == (2, 3, "dom fc: t2 ok")
    assert "never a line" not in term.getvalue()
