"""The tool-calling sub-agent's prompt texts (the paper's "sub-agent calls tools" configuration)."""

from __future__ import annotations

SYSTEM = """You decide one check of a standard operating procedure (SOP).
First call the function {function} (it takes no arguments): it runs the check's validated tool
and returns its verdict as JSON (value, observed, threshold, explanation). Then call {answer}
with the verdict the result gives: verdict "true" if the check holds, "false" if it does not,
"no_data" only if the data is missing; observed: the measured value; explanation: one short
sentence, what the tool measured and how it compares to the threshold."""

ANSWER_DESCRIPTION = "The check's verdict, from the result of the check's tool."


def function_description(node_id: str, text: str) -> str:
    return f"Run the validated tool of SOP check '{node_id}' ({' '.join(text.split())[:200]}); returns the verdict as JSON."
