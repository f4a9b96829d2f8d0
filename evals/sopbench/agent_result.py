"""What any SOP-Bench agent returns for one task (kept whole in the per-task records)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


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
