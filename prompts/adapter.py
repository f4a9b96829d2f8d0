"""DSPy answers the local model cannot get wrong in form: JSON constrained by the signature's schema.

llama.cpp compiles a JSON schema into a grammar (``response_format={"type": "json_object",
"schema": ...}``, its dialect of OpenAI's structured outputs), so every token the model samples
keeps the reply a valid object of the signature's output fields: a ``Literal`` is an enum, a
``bool`` is ``true``/``false``, a ``list[int]`` is an array of integers. For other models DSPy's
default adapter is kept.

Example:
    >>> with dspy_context(lm):  # doctest: +SKIP
    ...     pred = dspy.Predict(JudgeCondition)(condition=..., context=...)
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any

import dspy
from dspy.adapters.json_adapter import _get_structured_outputs_response_format


class SchemaJSONAdapter(dspy.JSONAdapter):
    """``JSONAdapter`` that sends the output schema the way llama.cpp's server reads it."""

    def _prepare_response_format(self, lm: Any, lm_kwargs: dict[str, Any], signature: Any) -> None:
        model = _get_structured_outputs_response_format(signature, True)
        schema = model.model_json_schema()
        schema.pop("title", None)
        lm_kwargs["response_format"] = {"type": "json_object", "schema": schema}


def constrained(lm: Any) -> bool:
    """Whether ``lm`` is the local model, whose answers are constrained by schema."""
    return bool(getattr(lm, "budgets_by_role", False))


def dspy_context(lm: Any) -> AbstractContextManager[Any]:
    """``dspy.context`` with ``lm`` (and, for the local model, the schema adapter); a no-op for None."""
    active = lm if lm is not None else dspy.settings.lm
    if constrained(active):
        return dspy.context(lm=active, adapter=SchemaJSONAdapter())
    return dspy.context(lm=lm) if lm is not None else nullcontext()


class ResponseFormatAdapter(SchemaJSONAdapter):
    """``SchemaJSONAdapter`` with a response format given per call (a grammar built for one
    node), while the prompt names the output field's plain type rather than printing the
    schema: the grammar enforces it, and a 1k-token schema in a 4k-token prompt only hurts."""

    def __init__(self, response_format: dict[str, Any]):
        super().__init__()
        self.response_format = response_format

    def _prepare_response_format(self, lm: Any, lm_kwargs: dict[str, Any], signature: Any) -> None:
        lm_kwargs["response_format"] = self.response_format


def dspy_context_with(lm: Any, response_format: dict[str, Any]) -> AbstractContextManager[Any]:
    """``dspy_context`` whose local-model calls are constrained by ``response_format``."""
    active = lm if lm is not None else dspy.settings.lm
    if constrained(active):
        return dspy.context(lm=active, adapter=ResponseFormatAdapter(response_format))
    return dspy.context(lm=lm) if lm is not None else nullcontext()
