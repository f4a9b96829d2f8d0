"""The label-free variant on scripted models: judged traces, votes, repair, the final pick."""

from __future__ import annotations

import json
import re

import pytest
import pytest_asyncio
from dspy.utils import DummyLM
from fake_chat import ScriptedChatModel
from langchain_core.messages import AIMessage
from toolmaker_sop import (
    LABELS,
    NO_WINDOW,
    NODE,
    RIGHT,
    TRAIN,
    diagnosis,
    toy_session,
)

from sopgraph.tools.toolmaker.label_free import Judges, majority, make_label_free, pick

shared_loop = pytest.mark.asyncio(loop_scope="module")
# Same verdicts as RIGHT (avg skips nulls anyway), longer code: loses the length tie-break.
RIGHT_LONGER = {**RIGHT, "query": RIGHT["query"] + " AND fill_pct IS NOT NULL"}


def sub_agent() -> ScriptedChatModel:
    """Investigates and answers each site's case correctly."""

    def reply(messages):
        site = re.search(r"\bS\d\b", str(messages[0].content)).group(0)
        if len(messages) <= 2:
            return AIMessage(
                f"```python\nprint(warehouse_execute_query(sql=\"SELECT * FROM readings WHERE site = '{site}'\"))\n```"
            )
        return AIMessage(f"ANSWER: checked {site}.\nVERDICT: {LABELS[site]}")

    return ScriptedChatModel(responder=reply)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def session(tmp_path_factory):
    async with toy_session(tmp_path_factory.mktemp("toy"), chat=sub_agent()) as s:
        yield s


def yes(reason="consistent with the SOP"):
    return {"consistent": "yes", "reason": reason}


def no(reason="it ignores the window"):
    return {"consistent": "no", "reason": reason}


@shared_loop
async def test_votes_repair_the_outlier_and_pick_by_agreement_then_review_then_length(session):
    unlabeled = [c for c in TRAIN if c.site in ("S3", "S4", "S6")]  # labels present: dropped
    answers = [
        yes(), no(), yes(),  # trace judge, one per trace
        RIGHT_LONGER, RIGHT, NO_WINDOW,  # N = 3 candidates
        yes(), yes(), no(),  # round 1: code review of each candidate
        diagnosis(), RIGHT,  # the outlier disagrees: diagnosis and rewrite
    ]  # fmt: skip
    lm = DummyLM(answers)
    deps = session.deps(NODE)
    deps.maker.lm = deps.reflector.lm = lm
    record = await make_label_free(deps, unlabeled, Judges(lm=lm), k=3, n=3, rounds=1)
    assert len(lm.history) == len(answers)
    assert record.label_free and all(t.case.expected is None for t in record.traces)
    assert [t.judged for t in record.traces] == [True, False, True]
    truth = {c.key(): LABELS[c.site] for c in unlabeled}
    assert record.pseudo_labels[0] == truth  # two right candidates and the traces outvote one
    first = [r for r in record.rounds if r.pass_round == 0]
    assert [(r.candidate_index, r.passed, r.carried) for r in first] == [
        (0, 3, True), (1, 3, True), (2, 0, False),
    ]  # fmt: skip
    final = [r for r in record.rounds if r.pass_round == 1]
    assert [r.passed for r in final] == [3, 3, 3]  # the outlier was repaired
    # agreement ties at 3; the review passed 0 and 1 (2 was reviewed before its repair);
    # 1 is shorter than 0
    assert record.best.candidate_index == 1 and record.train_pass == 1.0
    for h in lm.history:  # no label reaches any prompt
        assert "label:" not in json.dumps(h["messages"])


def test_majority_ignores_missing_votes_and_breaks_ties_toward_the_trace():
    assert majority(["true", "true", "false", None]) == "true"
    assert majority(["true", "false"], prefer="false") == "false"
    assert majority(["true", "false"]) == "false"  # no preference: a stable order
    assert majority([None, None]) is None


def test_pick_prefers_agreement_then_review_then_shorter_code():
    assert pick([(2, True, 10), (3, False, 500)]) == 1
    assert pick([(3, False, 10), (3, True, 500)]) == 1
    assert pick([(3, True, 500), (3, True, 10)]) == 1
    assert pick([(3, True, 10), (3, True, 10)]) == 0
