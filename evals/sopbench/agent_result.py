"""What any SOP-Bench agent returns for one task (kept whole in the per-task records)."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage
from pydantic import BaseModel, Field


def token_usage(messages: list[BaseMessage]) -> dict[str, int]:
    """Prompt, completion and total tokens over the model replies among ``messages``."""
    n_in = n_out = 0
    for m in messages:
        usage = getattr(m, "usage_metadata", None) or {}
        n_in += int(usage.get("input_tokens") or 0)
        n_out += int(usage.get("output_tokens") or 0)
    return {"input_tokens": n_in, "output_tokens": n_out, "total_tokens": n_in + n_out}


class AgentResult(BaseModel):
    answer: dict[str, str] | None  # parsed into the output columns; None: not completed
    final_text: str = ""
    error: str | None = None
    tokens: dict[str, int] = Field(
        default_factory=lambda: {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    )
    seconds: float = 0.0
    turns: int = 0
    steps: list[dict[str, Any]] = Field(default_factory=list)  # tool calls or graph steps
    forced_by: str | None = None  # the answer was forced: "repeat" (loop guard) or "budget"
    decided: dict[str, Any] | None = None  # the decide-by-code step, when the run asks for it
