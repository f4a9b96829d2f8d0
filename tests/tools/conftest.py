"""Fixtures shared by the tool tests."""

from pathlib import Path

import pytest
from toolmaker_sop import reset_dspy

# A two-branch SOP whose one decision node ``obs_paid`` takes a hand-written tool.
SOP = """\
id: tiny
input:
  order_id: {type: string, required: true}
entry:
  default: [obs_paid]
nodes:
  obs_paid:
    kind: observation
    text: The order is paid.
    next:
      true: [act_ship]
      false: [act_wait]
  act_ship: {kind: action, text: Ship it.}
  act_wait: {kind: action, text: Wait for the payment.}
"""


@pytest.fixture
def sop(tmp_path: Path) -> Path:
    """The tiny SOP's folder, with no tools yet."""
    d = tmp_path / "tiny"
    d.mkdir()
    (d / "sop.yaml").write_text(SOP)
    return d


@pytest.fixture(autouse=True)
def _reset_dspy():
    yield
    reset_dspy()
