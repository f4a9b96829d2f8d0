"""Turn a sub-agent's free-text answer into a Verdict: a regex for well-formed answers, else DSPy.

An answer that already states ``VERDICT: true|false|no_data`` needs no model call; any other
answer is read by ``dspy.Predict(ExtractVerdict)``, which ``compile_extractor`` can optimize
on labeled (question, answer, verdict) examples.

Example:
    >>> extractor = VerdictExtractor()
    >>> extractor.verdict("Idle above 25%?", "ANSWER: idle 31%\\nVERDICT: true\\nOBSERVED: 31").value
    'true'
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dspy
from dspy.utils.exceptions import AdapterParseError

from sopgraph.graphs.model import Verdict
from sopgraph.prompts.adapter import dspy_context
from sopgraph.prompts.envelope import role_lm
from sopgraph.prompts.optimize import Optimizer, compile_program
from sopgraph.prompts.signatures import ExtractVerdict

_VERDICT = re.compile(r"\bVERDICT\s*[:=]\s*[*`\"']*\s*(true|false|no[ _-]?data)\b", re.I)
_ANSWER = re.compile(
    r"\bANSWER\s*[:=]\s*(.*?)(?=\n\s*(?:VERDICT|OBSERVED|THRESHOLD)\b|\Z)", re.I | re.S
)
_EMPTY = {"", "none", "null", "n/a", "na", "-", "unknown"}


class ExtractionError(ValueError):
    """The answer could not be read as a verdict; ``str`` says why in one line."""


def parse_scalar(text: Any) -> Any:
    """A field value as JSON when it is (numbers, lists, objects), else the trimmed text."""
    if not isinstance(text, str):
        return text
    value = text.strip().strip("`*").strip()
    if value.lower() in _EMPTY:
        return None
    number = re.fullmatch(r"(-?\d+(?:\.\d+)?)\s*%?", value)
    if number:
        n = float(number.group(1))
        return int(n) if n.is_integer() and "." not in number.group(1) else n
    try:
        return json.loads(value)
    except (json.JSONDecodeError, ValueError):
        return value


def _field(answer: str, name: str) -> Any:
    match = re.search(rf"^\s*[*`]*{name}[*`]*\s*[:=]\s*(.+?)\s*$", answer, re.I | re.M)
    return parse_scalar(match.group(1)) if match else None


def normalize_value(value: Any) -> str:
    """``true``/``false``/``no_data`` from what a model wrote; raises ExtractionError otherwise."""
    text = str(value).strip().strip("`*'\"").lower().replace(" ", "_").replace("-", "_")
    text = {"nodata": "no_data", "yes": "true", "no": "false"}.get(text, text)
    if text not in ("true", "false", "no_data"):
        raise ExtractionError(f"verdict {value!r} is not one of true, false, no_data")
    return text


def preparse_verdict(answer: str) -> Verdict | None:
    """The verdict an answer states with ``VERDICT:``, or None when it states none."""
    matches = _VERDICT.findall(answer or "")
    if not matches:
        return None
    explanation = _ANSWER.search(answer)
    text = explanation.group(1) if explanation else answer
    return Verdict(
        value=normalize_value(matches[-1]),  # the last one is the model's final word
        observed=_field(answer, "OBSERVED"),
        threshold=_field(answer, "THRESHOLD"),
        explanation=" ".join(text.split())[:500],
    )


@contextmanager
def _unparsable() -> Iterator[None]:
    """A model reply DSPy cannot parse becomes a one-line ExtractionError."""
    try:
        yield
    except AdapterParseError as exc:
        first = next((line for line in str(exc).splitlines() if line.strip()), "unparsable")
        raise ExtractionError(
            f"the verdict extractor's reply could not be parsed: {first}"
        ) from None


OPTIMIZED_EXTRACTOR = Path(__file__).parent / "optimized" / "verdict_extractor.json"
"""The extractor optimized on the labeled train answers (``sopgraph model optimize``)."""


class VerdictExtractor(dspy.Module):
    """Reads the verdict out of a free-text answer.

    Args:
        lm: the DSPy LM for answers without a ``VERDICT:`` line; default ``dspy.settings.lm``.
        program: a saved, optimized program to load (its few-shot demos); ``"default"`` loads
            ``OPTIMIZED_EXTRACTOR`` when it exists, None starts zero-shot.
    """

    def __init__(
        self, lm: dspy.BaseLM | None = None, program: str | Path | None = "default"
    ) -> None:
        super().__init__()
        self.lm = role_lm(lm, "verdict")
        self.extract = dspy.Predict(ExtractVerdict)
        path = OPTIMIZED_EXTRACTOR if program == "default" else program
        if path is not None and Path(path).is_file():
            self.load(str(path))

    def _context(self):
        return dspy_context(self.lm)

    def _check_lm(self) -> None:
        if self.lm is None and dspy.settings.lm is None:
            raise ExtractionError(
                "the answer states no `VERDICT:` line and no DSPy LM is configured to read it"
            )

    def forward(self, question: str, answer: str) -> dspy.Prediction:
        parsed = preparse_verdict(answer)
        if parsed is not None:
            return dspy.Prediction(**parsed.model_dump(), source="preparse")
        self._check_lm()
        with self._context(), _unparsable():
            pred = self.extract(question=question, answer=answer)
        pred.source = "lm"
        return pred

    async def aforward(self, question: str, answer: str) -> dspy.Prediction:
        parsed = preparse_verdict(answer)
        if parsed is not None:
            return dspy.Prediction(**parsed.model_dump(), source="preparse")
        self._check_lm()
        with self._context(), _unparsable():
            pred = await self.extract.acall(question=question, answer=answer)
        pred.source = "lm"
        return pred

    def verdict(self, question: str, answer: str) -> Verdict:
        """The Verdict for one answer; raises ExtractionError when it cannot be read."""
        return to_verdict(self(question=question, answer=answer))

    async def averdict(self, question: str, answer: str) -> tuple[Verdict, str]:
        """The Verdict and how it was read (``preparse`` or ``lm``)."""
        pred = await self.acall(question=question, answer=answer)
        return to_verdict(pred), pred.source


def to_verdict(pred: dspy.Prediction) -> Verdict:
    """A Verdict from the extractor's prediction (numbers in text fields become numbers)."""
    return Verdict(
        value=normalize_value(pred.value),
        observed=parse_scalar(pred.observed),
        threshold=parse_scalar(pred.threshold),
        explanation=str(pred.explanation or "")[:500],
    )


def verdict_match(example: dspy.Example, pred: dspy.Prediction, trace: Any = None) -> bool:
    """The optimization metric: the extracted verdict value equals the label."""
    try:
        return normalize_value(pred.value) == normalize_value(example.value)
    except ExtractionError:
        return False


def compile_extractor(
    trainset: list[dspy.Example],
    *,
    lm: dspy.BaseLM | None = None,
    optimizer: Optimizer = "bootstrap",
    demos: int = 4,
) -> VerdictExtractor:
    """An extractor optimized on labeled examples, from a zero-shot start (see ``compile_program``).

    Each example has ``question``, ``answer`` (inputs) and ``value`` (plus optionally
    ``observed``, ``threshold``, ``explanation``). Save it with ``extractor.save(path)``.
    """
    return compile_program(
        VerdictExtractor(lm=lm, program=None), trainset, verdict_match,
        inputs=("question", "answer"), lm=lm, optimizer=optimizer, demos=demos,
    )  # fmt: skip
