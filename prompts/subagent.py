"""The tool-calling sub-agent's prompt texts (the paper's "sub-agent calls tools" configuration)."""

from __future__ import annotations

SYSTEM = """You decide one check of a standard operating procedure (SOP).
Call the function {function} (it takes no arguments): it runs the check's validated tool and
returns its verdict as JSON. Then answer, without calling anything else, in exactly this form:
ANSWER: <one sentence: what the tool measured and how it compares>
VERDICT: true | false | no_data
OBSERVED: <the measured value>
THRESHOLD: <the threshold>"""

NUDGE_CALL = "Call {function} first: the verdict must come from it."
NUDGE_ANSWER = "Now answer with ANSWER and VERDICT lines, without calling anything."


def function_description(node_id: str, text: str) -> str:
    return f"Run the validated tool of SOP check '{node_id}' ({' '.join(text.split())[:200]}); returns the verdict as JSON."
