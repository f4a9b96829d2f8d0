"""The tool-maker's models: its LM and the reflector's, read from the settings.

Imports nothing heavy at load (the core install has no DSPy): ``models_for`` builds the DSPy
LMs when it is called.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SPEC_TOKENS = 400  # a filled spec is ~150 tokens; room for a model that explains first
JUDGE_TOKENS = 200  # a diagnosis of two or three sentences
NO_MODEL = (
    "the tool-maker needs a model: set SOPGRAPH_MODEL (`local` for the local model; "
    "SOPGRAPH_CASSETTE=<file> replays a recorded run)"
)


@dataclass
class MakerModels:
    """The models of a make: the tool-maker's LM and the reflector's (short answers)."""

    name: str
    lm: Any  # tool-maker
    judge_lm: Any  # reflector


def models_for(settings: Any) -> MakerModels:
    """The tool-maker's and the reflector's LMs for ``settings`` (``nodes.models.Settings``,
    a model set). No DSPy cache: every figure is a real call (a cassette replays at the HTTP
    layer)."""
    from sopgraph.nodes.models import dspy_lm

    return MakerModels(
        name=settings.model.strip(),
        lm=dspy_lm(settings, role="toolmaker", cache=False, max_tokens=SPEC_TOKENS),
        judge_lm=dspy_lm(settings, role="toolmaker", cache=False, max_tokens=JUDGE_TOKENS),
    )
