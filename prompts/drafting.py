"""The drafting step as a DSPy signature: one section of a written SOP turned into graph steps.

The reply is constrained per call by the section's schema (``graphs/drafting/steps.py``: node
ids, outcome nodes and catalog names as enumerations) through ``dspy_context_with``; other
models get the same fields through DSPy's default adapter.
"""

from __future__ import annotations

from typing import Any

import dspy

from sopgraph.graphs.drafting.drafter import Propose, StepReply, StepRequest
from sopgraph.prompts.adapter import dspy_context_with

SAMPLE_TEMPERATURE = 0.7  # the first sample is greedy; later ones explore
# Output tokens a sentence's answer takes (its role, a node id, a result and an outcome, about
# 35 on Qwen's tokenizer), with room; the default budget (512) cuts a 15-sentence section.
TOKENS_PER_SENTENCE = 56


class DraftSection(dspy.Signature):
    """Turn one section of a standard operating procedure (SOP) into steps of a decision graph.
    For each numbered sentence give:
    `role`: `decision` when it checks or asks something whose result chooses what happens next,
    `action` when it tells someone to do something, `context` when it states no step
    (background, a definition);
    `after`: the earlier step this sentence follows (`start` for the procedure's first step); a
    sentence "If X, do Y" follows the step that found out X;
    `when`: `yes` when it follows that step's check holding ("if it is successful", "if there
    is an outage"), `no` when it follows the check failing ("if it fails", "otherwise", "if
    there is no outage"), `always` when it follows whatever the result;
    `outcome`: for an action that ends the procedure, the outcome it ends in, else `none`;
    `data` (with a catalog): what answers a decision, else `none`.
    Follow the feedback when given: it lists checks the earlier answer failed."""

    section: str = dspy.InputField(desc="the section's title")
    sentences: str = dspy.InputField(desc="the section's sentences: number: text")
    targets: str = dspy.InputField(desc="the procedure's steps: id: text")
    outcomes: str = dspy.InputField(desc="the outcomes the document states: id: value")
    catalog: str = dspy.InputField(desc="the data names a decision may read, or `none`")
    feedback: str = dspy.InputField(desc="failed checks of an earlier answer, or `none`")
    steps: dict = dspy.OutputField(desc="sentence number -> {role, after, when, outcome, data}")


def _tokens(usage: Any) -> tuple[int, int]:
    totals = usage.get_total_tokens() if usage is not None else {}
    prompt = sum(int(v.get("prompt_tokens") or 0) for v in totals.values())
    completion = sum(int(v.get("completion_tokens") or 0) for v in totals.values())
    return prompt, completion


def dspy_propose(lm: Any) -> Propose:
    """The drafter's model step on ``lm`` (a DSPy LM; the local model's replies are held to the
    step's schema). A reply that cannot be read is a failed step, counted, never raised."""
    predict = dspy.Predict(DraftSection)

    async def propose(request: StepRequest) -> StepReply:
        texts = {
            "section": request.section,
            "sentences": request.sentences,
            "targets": request.targets,
            "outcomes": request.outcomes,
            "catalog": request.catalog,
            "feedback": request.feedback,
        }
        keys = request.response_format["schema"]["properties"]["steps"]["required"]
        config = {
            "temperature": 0.0 if request.sample == 0 else SAMPLE_TEMPERATURE,
            "max_tokens": 32 + TOKENS_PER_SENTENCE * len(keys),
        }
        with dspy_context_with(lm, request.response_format), dspy.track_usage() as usage:
            try:
                pred = await predict.acall(**texts, config=config)
            except Exception as exc:  # noqa: BLE001 - an unreadable reply is a failed step
                prompt, completion = _tokens(usage)
                return StepReply(None, prompt, completion, f"{type(exc).__name__}: {exc}"[:300])
        prompt, completion = _tokens(usage)
        return StepReply({"steps": pred.steps}, prompt, completion)

    return propose
