"""Fixtures every test shares: DSPy's global settings reset, and no replayed request missing its cassette."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path

import dspy
import pytest
from dspy.dsp.utils.settings import DEFAULT_CONFIG

CASSETTES = Path(__file__).parent / "cassettes"


@pytest.fixture(autouse=True)
def _reset_dspy() -> Iterator[None]:
    """A test that configures DSPy (``dspy.settings.configure``) leaves nothing behind."""
    yield
    dspy.settings.configure(**copy.deepcopy(DEFAULT_CONFIG), inherit_config=False)


@pytest.fixture(autouse=True)
def _no_cassette_misses() -> Iterator[None]:
    """A test that replays a committed cassette fails if any request missed it."""
    from sopgraph.nodes.models import running_fronts

    before = {id(f): len(f.misses) for f in running_fronts()}
    yield
    for front in running_fronts():
        cassette = front.cassette
        if cassette is None or CASSETTES not in cassette.path.resolve().parents:
            continue
        new = front.misses[before.get(id(front), 0) :]
        assert not new, f"{len(new)} request(s) missed the cassette: {new[0]}"
