"""DSPy signatures: each single-shot LLM step of sopgraph as a typed, described Signature."""

from __future__ import annotations

from typing import Literal

import dspy

VerdictValue = Literal["true", "false", "no_data"]


class ExtractVerdict(dspy.Signature):
    """Read a sub-agent's final answer to one check of a standard operating procedure (SOP)
    and state the verdict it reached. Do not re-judge the check: report what the answer says.
    `true` means the check holds, `false` that it does not, `no_data` only that the data
    needed was missing or could not be read."""

    question: str = dspy.InputField(desc="the SOP check, with the site's parameters filled in")
    answer: str = dspy.InputField(desc="the sub-agent's final free-text answer to the check")
    observed: str = dspy.OutputField(
        desc="the measured value the answer reports (a number when it is one); empty if none"
    )
    threshold: str = dspy.OutputField(
        desc="the threshold the answer compared against; empty if none"
    )
    explanation: str = dspy.OutputField(
        desc="one sentence: how the observed value compares with the check's threshold"
    )
    # last: a small model writes the comparison first, then the verdict that follows from it
    value: VerdictValue = dspy.OutputField(desc="the verdict the answer reached")
