"""A few truly live calls of the default local model (Qwen2.5-Coder-1.5B) on every CI run.

Each path's accuracy is measured by ``sopgraph model ...`` and replayed from cassettes
(tests/evals/test_model_replay.py); these check that the live path works end to end: the
server starts from the verified GGUF, and the constrained answers parse.
"""

from __future__ import annotations

import time

import pytest
from model_env import clean_env  # noqa: F401 - the autouse fixture

from sopgraph.evals.model_paths import eval_router, load_cases
from sopgraph.nodes.models import (
    LocalModelUnavailable,
    ModelFileError,
    Settings,
    dspy_lm,
    ensure_installed,
    shared_server,
    verified_path,
)
from sopgraph.nodes.router import DSPyRouter
from sopgraph.prompts.judge import ConditionJudge
from sopgraph.prompts.routing import render_context
from sopgraph.prompts.verdict import VerdictExtractor

pytestmark = pytest.mark.local_llm

try:
    ensure_installed()
    verified_path()
except (LocalModelUnavailable, ModelFileError) as exc:
    pytest.skip(str(exc), allow_module_level=True)


@pytest.fixture(scope="module")
def qwen() -> Settings:
    began = time.perf_counter()
    server = shared_server(Settings(model="local"))
    print(f"\nQwen server started in {time.perf_counter() - began:.1f} s ({server.base_url})")
    return Settings(model="local", base_url=server.base_url)


def test_the_judge_answers_in_schema(qwen):
    case = load_cases("judge")[0]
    began = time.perf_counter()
    pred = ConditionJudge(lm=dspy_lm(qwen, cache=False)).judge(
        case["condition"], render_context(case["input"])
    )
    print(f"\njudge: {pred.holds} ({time.perf_counter() - began:.1f} s): {pred.rationale}")
    assert isinstance(pred.holds, bool) and isinstance(pred.rationale, str) and pred.rationale


def test_the_verdict_extractor_answers_in_schema(qwen):
    case = next(c for c in load_cases("verdict") if c["split"] == "eval")
    extractor = VerdictExtractor(lm=dspy_lm(qwen, cache=False))
    verdict = extractor.verdict(case["question"], case["answer"])
    print(f"\nverdict: {verdict.value} observed={verdict.observed!r}")
    assert verdict.value in ("true", "false", "no_data")


async def test_the_dspy_router_answers_with_branch_numbers(qwen):
    """The schema-constrained router (the function-calling one gets no call from this model:
    it writes the function's name as text; see the README's live figures)."""
    router = DSPyRouter(lm=dspy_lm(qwen))
    result = await eval_router(router, load_cases("router")[:1])
    print(f"\nrouter: {result['cases'][0]}")
    assert not result["cases"][0]["got"].startswith("failed:"), result["cases"][0]
