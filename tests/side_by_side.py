"""Replays in a subprocess each, started side by side, so CI stays under its 30 minutes.

A replay of a live run spends much of its time waiting on the processes it starts (its MCP
servers, the sandbox, Python's own start-up), so a module's selected replays run a few at a
time from the first test that needs one; each test then waits for its own and checks it.
Use it in a module-scoped fixture::

    @pytest.fixture(scope="module")
    def replays(request, tmp_path_factory):
        yield from side_by_side(request, tmp_path_factory, "test_x", _replay)

and in ``test_x``: ``out = replays[request.node.callspec.id].result()``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

WORKERS = 3  # replays at once (a replay's processes need well under 1 GB)


def side_by_side(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    test: str,
    run: Callable[[dict[str, Any], Path], Any],
    workers: int = WORKERS,
) -> Iterator[dict[str, Future]]:
    """``run(params, folder)`` started for each selected test ``test`` of the requesting module
    (its parametrize values as a dict, and an empty folder of its own, made here: pytest's
    temporary folders are not made safely from threads), ``workers`` at a time; yields test id
    -> the pending result, and at teardown waits for those running."""
    items = [
        item
        for item in request.session.items
        if getattr(item, "originalname", "") == test and item.module is request.module
    ]
    pool = ThreadPoolExecutor(workers)
    folders = {item.callspec.id: tmp_path_factory.mktemp("replay") for item in items}
    yield {
        item.callspec.id: pool.submit(run, dict(item.callspec.params), folders[item.callspec.id])
        for item in items
    }
    pool.shutdown(wait=True, cancel_futures=True)
