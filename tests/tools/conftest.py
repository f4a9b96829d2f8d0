"""Fixtures shared by the tool tests."""

import pytest
from toolmaker_sop import reset_dspy


@pytest.fixture(autouse=True)
def _reset_dspy():
    yield
    reset_dspy()
