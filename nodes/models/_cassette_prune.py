"""Pruning a cassette to the exchanges one run asks for: ``SOPGRAPH_CASSETTE_PRUNE=1``.

After a re-record in fill mode a cassette still holds the exchanges the changed code no longer
asks. Replay the run once with ``SOPGRAPH_CASSETTE_MODE=replay SOPGRAPH_CASSETTE_PRUNE=1``:
when the process exits, the file keeps only the exchanges the run was answered from (a key
asked twice keeps its first two), in their order, written whole or not at all. A run that
missed a request prunes nothing (it did not replay whole: pruning would keep too little), and
says so. Every front of the process that reads the same file counts (a model and its judge
may share one). One process a cassette: two runs pruning one file at once would each keep
only what they asked.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Protocol


class Cassette(Protocol):
    """What pruning reads of ``_model_proxy.Cassette`` (which imports this module)."""

    path: Path
    missed: int
    _served: dict[str, int]


_tracked: dict[Path, list[Cassette]] = {}


def wanted() -> bool:
    return os.environ.get("SOPGRAPH_CASSETTE_PRUNE", "").strip() not in ("", "0")


def track(cassette: Cassette) -> None:
    """Prune ``cassette``'s file at exit to what this process's fronts replayed from it."""
    path = cassette.path.resolve()
    if path not in _tracked:
        _tracked[path] = []
        atexit.register(_at_exit, path)
    _tracked[path].append(cassette)


def prune(path: Path, asked: Counter[str]) -> tuple[int, int]:
    """Keep the lines of ``path`` whose key ``asked`` counts, each as many times, in order:
    (lines before, lines after). The file is replaced whole (a temporary file, renamed)."""
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    kept, seen = [], Counter()
    for line in lines:
        key = json.loads(line)["key"]
        if seen[key] < asked[key]:
            kept.append(line)
            seen[key] += 1
    tmp = path.with_name(path.name + ".pruning")
    tmp.write_text("".join(f"{line}\n" for line in kept))
    tmp.replace(path)
    return len(lines), len(kept)


def _at_exit(path: Path) -> None:
    cassettes = _tracked.pop(path, [])
    missed = sum(c.missed for c in cassettes)
    if missed:
        print(f"cassette {path}: not pruned: {missed} request(s) missing", file=sys.stderr)
        return
    asked = Counter()
    for c in cassettes:
        asked.update(c._served)  # noqa: SLF001 - the replay counts, read once at exit
    if not asked:
        return  # nothing was replayed (this process never used the front)
    before, after = prune(path, asked)
    print(f"cassette {path}: pruned {before} -> {after} exchanges", file=sys.stderr)
