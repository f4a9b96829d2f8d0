"""Verdict extraction: the VERDICT pre-parse, the DSPy module on DummyLM, and its optimizer."""

from __future__ import annotations

import dspy
import pytest
from dspy.utils import DummyLM

from sopgraph.prompts.codeact import FunctionSpec, render_system_prompt, signature
from sopgraph.prompts.verdict import (
    ExtractionError,
    VerdictExtractor,
    compile_extractor,
    normalize_value,
    parse_scalar,
    preparse_verdict,
    verdict_match,
)

QUESTION = "The station was idle more than 25% of the last 15 minutes."


@pytest.mark.parametrize(
    "answer,value,observed,threshold",
    [
        ("ANSWER: idle 31.2%\nVERDICT: true\nOBSERVED: 31.2\nTHRESHOLD: 25%", "true", 31.2, 25),
        ("ANSWER: below\nVERDICT: False\nOBSERVED: 12", "false", 12, None),
        ("**VERDICT:** no data", "no_data", None, None),
        ("VERDICT: true ... on reflection VERDICT: no_data", "no_data", None, None),
        (
            'ANSWER: per station\nVERDICT: true\nOBSERVED: {"A": 31, "B": 40}',
            "true",
            {"A": 31, "B": 40},
            None,
        ),
    ],
)
def test_preparse_reads_well_formed_answers(answer, value, observed, threshold):
    v = preparse_verdict(answer)
    assert (v.value, v.observed, v.threshold) == (value, observed, threshold)


def test_preparse_keeps_the_answer_as_explanation_and_ignores_answers_without_verdict():
    v = preparse_verdict("ANSWER: the station was idle 31% of the time\nVERDICT: true")
    assert v.explanation == "the station was idle 31% of the time"
    assert preparse_verdict("the station looked idle, so probably true") is None
    assert preparse_verdict("VERDICT: maybe") is None  # not a verdict: left to the LM


def test_normalize_value():
    assert [normalize_value(v) for v in ("True", "no data", "No-Data", "`false`")] == [
        "true", "no_data", "no_data", "false",
    ]  # fmt: skip
    with pytest.raises(ExtractionError, match="'maybe' is not one of true, false, no_data"):
        normalize_value("maybe")


def test_parse_scalar():
    assert (
        parse_scalar("31.5%") == 31.5 and parse_scalar("4") == 4 and parse_scalar(" n/a ") is None
    )
    assert parse_scalar("[1, 2]") == [1, 2] and parse_scalar("ST-12") == "ST-12"


def test_well_formed_answer_needs_no_lm():
    lm = DummyLM([])  # any call would answer "No more responses" and fail to parse
    pred = VerdictExtractor(lm=lm)(question=QUESTION, answer="ANSWER: ok\nVERDICT: false")
    assert pred.value == "false" and pred.source == "preparse" and lm.history == []


def test_free_text_is_read_by_the_lm():
    lm = DummyLM([{"value": "true", "observed": "31.2", "threshold": "25", "explanation": "above"}])
    v = VerdictExtractor(lm=lm).verdict(
        QUESTION, "It sat idle 31.2 percent of the window, over the limit."
    )
    assert (v.value, v.observed, v.threshold, v.explanation) == ("true", 31.2, 25, "above")
    prompt = lm.history[0]["messages"][-1]["content"]
    assert "over the limit" in prompt and QUESTION in prompt


async def test_async_extraction_uses_the_configured_lm():
    answer = {"value": "no_data", "observed": "", "threshold": "", "explanation": "missing"}
    with dspy.context(lm=DummyLM([answer])):  # configure() is refused inside an async task
        verdict, source = await VerdictExtractor().averdict(QUESTION, "the metric was not reported")
    assert verdict.value == "no_data" and verdict.observed is None and source == "lm"


def test_unparsable_lm_reply_and_missing_lm_are_one_line_errors():
    lm = DummyLM([{"value": "maybe", "observed": "", "threshold": "", "explanation": ""}])
    with pytest.raises(ExtractionError) as exc:
        VerdictExtractor(lm=lm).verdict(QUESTION, "hard to say")
    assert "\n" not in str(exc.value)
    with pytest.raises(ExtractionError, match="no DSPy LM is configured"):
        VerdictExtractor().verdict(QUESTION, "hard to say")


def test_compile_extractor_bootstraps_demos_from_labeled_examples():
    trainset = [
        dspy.Example(question=QUESTION, answer="idle 31 percent, above", value="true"),
        dspy.Example(question=QUESTION, answer="idle 5 percent, fine", value="false"),
        dspy.Example(question=QUESTION, answer="no rows came back", value="no_data"),
    ]
    lm = DummyLM(
        [
            {"value": "true", "observed": "31", "threshold": "25", "explanation": "above"},
            {"value": "false", "observed": "5", "threshold": "25", "explanation": "below"},
            {"value": "true", "observed": "", "threshold": "", "explanation": "wrong on purpose"},
        ]
    )
    compiled = compile_extractor(trainset, lm=lm)
    demos = compiled.extract.demos
    # the first two were right and became demos; the third failed the metric
    assert [d.answer for d in demos if d.get("explanation")] == [
        "idle 31 percent, above",
        "idle 5 percent, fine",
    ]
    assert isinstance(compiled, VerdictExtractor) and compiled.lm is lm


def test_verdict_match_metric():
    ex = dspy.Example(value="true")
    assert verdict_match(ex, dspy.Prediction(value="True"))
    assert not verdict_match(ex, dspy.Prediction(value="false"))
    assert not verdict_match(ex, dspy.Prediction(value="perhaps"))


def test_system_prompt_lists_functions_and_keeps_unknown_braces():
    spec = FunctionSpec(
        name="ops_execute_query",
        server="ops",
        tool="execute_query",
        description="Run a read-only SQL query {like this}.",
        input_schema={
            "properties": {"sql": {"type": "string"}, "limit": {"type": "integer", "default": 100},
                           "site": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
            "required": ["sql", "site"],
        },
    )  # fmt: skip
    assert signature(spec) == "ops_execute_query(sql: str, site: str | None, limit: int = 100)"
    text = render_system_prompt(
        question="Idle  above\n 25%?", functions=[spec], imports=("math", "json"), max_turns=4,
        now="2025-01-01T10:00:00Z", given={"station": "ST-1"}, data=["ops.idle"],
    )  # fmt: skip
    assert "Idle above 25%?" in text and "{like this}" in text and "{question}" not in text
    assert "Imports allowed: math, json." in text and "at most 4 replies" in text
    assert 'Input: {"station": "ST-1"}' in text and "Verdicts of earlier checks: none" in text
    assert "Time of the input (NOW): 2025-01-01T10:00:00Z" in text
