"""The progress bar of the measuring commands, on stderr so that stdout stays parseable."""

from __future__ import annotations

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
