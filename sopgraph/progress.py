"""The progress bar of the measuring commands, on stderr so that stdout stays parseable."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


def progress_bar(enabled: bool) -> Any:
    """A rich bar: description, bar, done/total, time elapsed; gone when it finishes."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=Console(stderr=True), transient=True, disable=not enabled,
    )  # fmt: skip


@contextmanager
def per_item(
    label: str,
    n: int,
    line: Callable[[Any, int, int], str],
    brief: Callable[[Any], str],
) -> Iterator[Callable[[Any, int, int], None]]:
    """A callback for each finished item ``(item, done, n)``: a line on stderr (``line``, for
    logs and pipes), or on a terminal a bar of ``n`` reading ``label: brief(last item)``."""
    if not sys.stderr.isatty():
        yield lambda item, i, total: print(line(item, i, total), file=sys.stderr, flush=True)
        return
    with progress_bar(True) as bar:
        job = bar.add_task(label, total=n)

        def show(item: Any, i: int, total: int) -> None:
            bar.update(job, completed=i, description=f"{label}: {brief(item)[:70]}")

        yield show
