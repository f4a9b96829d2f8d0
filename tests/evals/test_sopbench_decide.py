"""Decide by code (``evals/sopbench/decide.py``, ``gathered.py``, ``rule_code.py``): the data
the code sees, the answer the host accepts, the code run in the real sandbox, and the one retry
with the error."""

from __future__ import annotations

import asyncio
import json

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from sopgraph.evals.sopbench.decide import (
    CATCHES,
    QUOTE,
    UNREAD,
    abstains,
    decide_by_code,
    decide_prompt,
    decide_verified,
    voted,
)
from sopgraph.evals.sopbench.gathered import gathered, typed
from sopgraph.nodes.sandbox import run_code
from sopgraph.tools.toolmaker.rule_code import (
    MARK,
    as_function,
    catches,
    checked_answer,
    fields,
    program,
    reads,
)

ALLOWED = {"refund_decision": ["Approved", "Rejected"]}
SOP = '2.3 If the days since delivery are at most 30, the decision is "Approved"; otherwise "Rejected".'


def _conversation() -> list:
    call = {"name": "getOrder", "args": {"order_id": "O_1"}, "id": "c1"}
    again = {"name": "getOrder", "args": {"order_id": "O_1"}, "id": "c2"}
    days = {"name": "daysSinceDelivery", "args": {"order_id": "O_1"}, "id": "c3"}
    return [
        HumanMessage("Task input: ..."),
        AIMessage("", tool_calls=[call]),
        ToolMessage(
            '{"order_id": "O_1", "status": "delivered"}', tool_call_id="c1", name="getOrder"
        ),
        AIMessage("", tool_calls=[again]),
        ToolMessage(
            '{"order_id": "O_1", "status": "delivered"}\n\n(You already called getOrder ...)',
            tool_call_id="c2",
            name="getOrder",
        ),
        AIMessage("", tool_calls=[days]),
        ToolMessage("41", tool_call_id="c3", name="daysSinceDelivery"),
        AIMessage("", tool_calls=[{"name": "answer", "args": {}, "id": "c4"}]),
        ToolMessage('{"refund_decision": "Approved"}', tool_call_id="c4", name="answer"),
    ]


def test_numbers_written_as_strings_are_numbers_and_codes_stay_text():
    # tools over CSV files return every value as a string; the rule's code compares numbers
    assert [typed(v) for v in ["1.3", "104", "-0.5", " 89.1 ", "0", "0.055"]] == [
        1.3, 104, -0.5, 89.1, 0, 0.055,
    ]  # fmt: skip
    codes = ["0100", "PARTNER200", "1e5", "1,000", "+3", "3.", ".5", "", "High", None, 7]
    assert [typed(v) for v in codes] == codes
    msgs = [
        AIMessage("", tool_calls=[{"name": "score", "args": {}, "id": "c1"}]),
        ToolMessage('{"engagement_score": "1.3", "source": "ads.com"}', tool_call_id="c1", name="score"),
    ]  # fmt: skip
    data = gathered({"partner_id": "0100", "clicks": "104"}, msgs)
    assert data == {
        "partner_id": "0100",
        "clicks": 104,
        "engagement_score": 1.3,
        "source": "ads.com",
    }
    ran = asyncio.run(run_code(program("answer = {'x': data['engagement_score'] >= 1.0}", data)))
    assert ran.ok and ran.stdout.strip().endswith('{"x": true}'), ran.error


def test_the_data_is_the_input_then_every_result_field_and_never_the_answer():
    data = gathered({"order_id": "O_1", "note": "late"}, _conversation())
    # the loop guard's note after a repeated result is dropped; a bare value keeps its tool name
    assert data == {
        "order_id": "O_1",
        "note": "late",
        "status": "delivered",
        "daysSinceDelivery": 41,
    }
    prompt = decide_prompt(SOP, data, ALLOWED)
    assert "'daysSinceDelivery': 41" in prompt
    assert '`refund_decision` must be exactly one of: "Approved", "Rejected"' in prompt


def test_the_host_accepts_only_an_answer_with_every_column_and_an_allowed_value():
    good = f"work\n{MARK}{json.dumps({'refund_decision': 'rejected'})}\n"
    assert checked_answer(good, ALLOWED) == ({"refund_decision": "Rejected"}, None)
    assert checked_answer("42\n", ALLOWED) == (None, "it printed no answer")
    alone = f"{MARK}{json.dumps('approved')}"  # the one output column's value given alone
    assert checked_answer(alone, ALLOWED) == ({"refund_decision": "Approved"}, None)
    two = {**ALLOWED, "reason": []}
    assert checked_answer(alone, two) == (None, "`answer` is str, not a dict")
    _, why = checked_answer(f"{MARK}{json.dumps({'decision': 'Approved'})}", ALLOWED)
    assert why == "`answer` has no 'refund_decision' key"
    _, why = checked_answer(f"{MARK}{json.dumps({'refund_decision': 'Maybe'})}", ALLOWED)
    assert why == "answer['refund_decision'] is 'Maybe', not one of ['Approved', 'Rejected']"
    free = {"hazard_score": []}  # no values listed: any text, a whole float written as an int
    assert checked_answer(f"{MARK}{json.dumps({'hazard_score': 12.0})}", free) == (
        {"hazard_score": "12"},
        None,
    )


def test_the_code_runs_in_the_sandbox_over_the_data():
    code = 'answer = {"refund_decision": "Approved" if data["days"] <= 30 else "Rejected"}'
    result = asyncio.run(run_code(program(code, {"days": 41})))
    assert result.ok, result.error
    assert checked_answer(result.stdout, ALLOWED) == ({"refund_decision": "Rejected"}, None)


def test_each_plain_field_is_a_variable_too_and_a_name_the_code_assigns_is_its_own():
    data = {"order_id": "O_1", "daysSinceDelivery": 41, "id": 7, "max": 2, "data": 0,
            "answer": "x", "_private": 1, "two words": 1, "class": 1}  # fmt: skip
    # builtins, keywords, the program's own names and non-names stay keys of `data` only
    assert fields(data) == ["order_id", "daysSinceDelivery"]
    # the small model reads one field through `data`, then writes the next as a bare name
    code = (
        'order = data["order_id"]\n'
        'answer = {"refund_decision": "Rejected" if daysSinceDelivery > 30 else "Approved"}'
    )
    result = asyncio.run(run_code(program(code, data)))
    assert result.ok, result.error
    assert checked_answer(result.stdout, ALLOWED) == ({"refund_decision": "Rejected"}, None)
    mine = "daysSinceDelivery = 3\nanswer = {'refund_decision': 'Approved' if daysSinceDelivery <= 30 else 'x'}"
    assert asyncio.run(run_code(program(mine, data))).stdout.strip().endswith('"Approved"}')
    # a name that is no field still fails, so the host sees the error
    unknown = asyncio.run(run_code(program("answer = {'refund_decision': days_since}", data)))
    assert not unknown.ok and "days_since" in (unknown.error or "")
    # reading a field's variable is reading the data; a constant is not
    assert reads("answer = daysSinceDelivery > 30", data)
    assert not reads("answer = {'refund_decision': 'Approved'}", data)
    assert not reads("max = 3\nanswer = max", data)


def _model(*replies: str) -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter(AIMessage(r) for r in replies))


def test_a_failing_reply_goes_back_once_with_its_error_then_the_code_decides():
    first = '```python\nanswer = {"refund_decision": data["days_since"]}\n```'
    second = '```python\nanswer = {"refund_decision": "Rejected" if data["daysSinceDelivery"] > 30 else "Approved"}\n```'
    decision = asyncio.run(
        decide_by_code(
            _model(first, second), SOP, {"order_id": "O_1"}, _conversation(), ALLOWED,
            {"refund_decision": "Approved"},
        )
    )  # fmt: skip
    assert decision.by == "code"
    assert decision.answer == {"refund_decision": "Rejected"}
    assert decision.agent_answer == {"refund_decision": "Approved"}
    assert decision.attempts == 2
    assert decision.errors == ["KeyError: 'days_since'"]


def test_when_no_reply_gives_a_usable_answer_the_agent_answer_stands():
    bad = '```python\nanswer = {"refund_decision": "Maybe" if data["status"] else "No"}\n```'
    decision = asyncio.run(
        decide_by_code(
            _model(bad, bad), SOP, {}, _conversation(), ALLOWED, {"refund_decision": "Approved"}
        )
    )
    assert (decision.by, decision.answer, decision.attempts) == ("agent", None, 2)
    assert len(decision.errors) == 2 and "not one of" in decision.errors[0]


def test_a_constant_answer_is_refused_unrun_and_goes_back_once():
    constant = '```python\nanswer = {"refund_decision": "Approved"}\n```'
    rule = '```python\nanswer = {"refund_decision": "Rejected" if data.get("daysSinceDelivery", 0) > 30 else "Approved"}\n```'
    decision = asyncio.run(
        decide_by_code(_model(constant, rule), SOP, {}, _conversation(), ALLOWED, None)
    )
    assert (decision.by, decision.answer) == ("code", {"refund_decision": "Rejected"})
    assert decision.errors == [UNREAD]


def test_the_vote_takes_the_answer_most_replies_give_and_a_tie_goes_to_the_first():
    a, r = {"refund_decision": "Approved"}, {"refund_decision": "Rejected"}
    assert voted([a, r, r]) == r
    assert voted([a, r]) == a  # a tie: the greedy reply's
    assert voted([None, r, a]) == r  # the greedy reply unusable: the first usable
    assert voted([None, None]) is None


class _Recording(GenericFakeChatModel):
    """Keeps the messages and settings of every request (``bind`` passes its settings as
    keyword arguments)."""

    asked: list = []

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        self.asked.append((list(messages), kwargs))
        return await super()._agenerate(messages, stop=stop, run_manager=run_manager, **kwargs)


def test_votes_sample_other_replies_to_the_greedy_prompt_and_the_majority_decides():
    constant = '```python\nanswer = {"refund_decision": "Approved"}\n```'
    wrong = (
        '```python\nanswer = {"refund_decision": "Approved" if data["status"] else "Rejected"}\n```'
    )
    rule = '```python\nanswer = {"refund_decision": "Rejected" if data["daysSinceDelivery"] > 30 else "Approved"}\n```'
    model = _Recording(messages=iter(AIMessage(x) for x in (constant, wrong, rule, constant, rule)))
    model.asked = []
    decision = asyncio.run(decide_by_code(model, SOP, {}, _conversation(), ALLOWED, None, votes=4))
    # greedy: the constant refused, then "Approved"; samples: "Rejected", refused, "Rejected"
    assert (decision.by, decision.answer) == ("code", {"refund_decision": "Rejected"})
    assert [v["seed"] for v in decision.votes] == [None, 1, 2, 3]  # None: the greedy reply
    assert [v["answer"] for v in decision.votes] == [
        {"refund_decision": "Approved"}, {"refund_decision": "Rejected"}, None,
        {"refund_decision": "Rejected"},
    ]  # fmt: skip
    assert decision.votes[2]["error"] == UNREAD
    (first, _), (retry, greedy_kw), *samples = model.asked
    assert len(retry) == len(first) + 2 and "temperature" not in greedy_kw
    for i, (messages, kw) in enumerate(samples, start=1):
        assert messages == retry  # the prompt the last greedy reply answered
        assert (kw["temperature"], kw["seed"]) == (0.5, i)


def test_one_vote_asks_nothing_more():
    rule = '```python\nanswer = {"refund_decision": "Rejected" if data["daysSinceDelivery"] > 30 else "Approved"}\n```'
    model = _Recording(messages=iter([AIMessage(rule)]))
    model.asked = []
    decision = asyncio.run(decide_by_code(model, SOP, {}, _conversation(), ALLOWED, None))
    assert (decision.answer, decision.votes, len(model.asked)) == (
        {"refund_decision": "Rejected"}, [], 1,
    )  # fmt: skip


def test_quote_asks_for_the_sop_sentence_above_each_step_and_code_asks_the_same_as_before():
    data = {"daysSinceDelivery": 41}
    plain = decide_prompt(SOP, data, ALLOWED)
    quoted = decide_prompt(SOP, data, ALLOWED, quote=True)
    assert QUOTE not in plain and QUOTE in quoted
    # the quote request is the one difference: the plain prompt is the recorded runs' prompt
    assert quoted.replace(QUOTE, "") == plain
    # a reply whose steps sit under quoted sentences runs as any other (comments are code)
    rule = (
        "```python\n# 2.3 If the days since delivery are at most 30, the decision is "
        '"Approved"; otherwise "Rejected".\n'
        'answer = {"refund_decision": "Approved" if data["daysSinceDelivery"] <= 30 else "Rejected"}\n```'
    )
    model = _Recording(messages=iter([AIMessage(rule)]))
    model.asked = []
    decision = asyncio.run(
        decide_by_code(model, SOP, {}, _conversation(), ALLOWED, None, quote=True)
    )
    assert decision.answer == {"refund_decision": "Rejected"}
    assert QUOTE in model.asked[0][0][-1].content


def test_an_early_return_or_break_outside_a_function_or_loop_runs_as_the_rule_s_body():
    # "if the order is not found ... no further step applies", written as a bare return
    rule = (
        "```python\nif data.get('status') != 'delivered':\n"
        '    answer = {"refund_decision": "Rejected"}\n    return\n'
        'answer = {"refund_decision": "Approved" if data["daysSinceDelivery"] <= 30 else "Rejected"}\n```'
    )
    returned = rule.replace("    return\n", "    return answer\n")
    broken = rule.replace("    return\n", "    break\n")  # the same exit written as a `break`
    for reply in (rule, returned, broken):
        decision = asyncio.run(
            decide_by_code(_model(reply), SOP, {}, _conversation(), ALLOWED, None)
        )
        assert (decision.answer, decision.errors) == ({"refund_decision": "Rejected"}, [])
    lost = {"order_id": "O_1", "status": "lost"}
    code = as_function(rule.split("```python\n")[1].split("```")[0])
    out = asyncio.run(run_code(program(code, lost)))
    assert json.loads(out.stdout.split(MARK)[1]) == {"refund_decision": "Rejected"}
    # code without a return of its own runs as written
    assert as_function('answer = {"refund_decision": "Approved"}') == (
        'answer = {"refund_decision": "Approved"}'
    )
    # a loop's own break stays; one in its `else`, outside any loop, is the rule's exit
    looped = (
        "for k in data:\n    if k == 'status':\n        break\nelse:\n    answer = 1\n    break\n"
    )
    assert as_function(looped.split("else")[0]) == looped.split("else")[0]
    body = as_function(looped + "answer = 2")
    assert body.count("break") == 1 and "    return answer" in body
    for data, want in (({"status": "x"}, 2), ({"order_id": "O_1"}, 1)):
        out = asyncio.run(run_code(program(as_function(looped + "answer = 2"), data)))
        assert json.loads(out.stdout.split(MARK)[1]) == want


def test_code_that_catches_its_own_errors_is_refused_unrun_and_goes_back_once():
    swallowing = (
        "```python\ntry:\n    days = data['days_since_delivery']\nexcept KeyError:\n"
        '    days = 0\nanswer = {"refund_decision": "Approved" if days <= 30 else "Rejected"}\n```'
    )
    plain = swallowing.replace("try:\n    days", "days").split("except")[0] + (
        'answer = {"refund_decision": "Approved" if days <= 30 else "Rejected"}\n```'
    )
    assert catches(swallowing) is False  # the reply's text is not code: the fence
    assert catches(swallowing.split("```python\n")[1].rstrip("`\n")) is True
    decision = asyncio.run(
        decide_by_code(
            _model(swallowing, plain), SOP, {}, _conversation(), ALLOWED,
            {"refund_decision": "Approved"},
        )
    )  # fmt: skip
    # the first reply never ran; the second failed on the value the data lacks: the agent's stands
    assert decision.errors[0] == CATCHES
    assert decision.errors[1] == "KeyError: 'days_since_delivery'"
    assert (decision.by, decision.answer) == ("agent", None)


def test_a_failed_call_of_a_tool_that_also_answered_is_not_data_and_a_lone_failure_is():
    from langchain_core.tools import StructuredTool, ToolException

    async def score(product_id: str) -> str:
        raise ToolException("score() got an unexpected keyword argument 'formId'")

    tool = StructuredTool.from_function(
        coroutine=score, name="score", description="a score", handle_tool_error=True
    )
    call = {"name": "score", "args": {"product_id": "P_1"}, "id": "c9", "type": "tool_call"}
    failed = asyncio.run(tool.ainvoke(call))
    assert failed.status == "error"  # what an agent's failed MCP call comes back as
    ok = ToolMessage('{"score": 4}', tool_call_id="c10", name="score")
    assert gathered({"product_id": "P_1"}, [failed, ok]) == {"product_id": "P_1", "score": 4}
    # no later call answered it: the failure is what the procedure may decide on ("not found")
    assert gathered({}, [failed]) == {"score": failed.content}
    assert gathered({}, [ok, failed]) == {"score": 4}


REJECT = '```python\nanswer = {"refund_decision": "Rejected" if data["daysSinceDelivery"] > 30 else "Approved"}\n```'
APPROVE = '```python\nanswer = {"refund_decision": "Approved" if data["daysSinceDelivery"] > 0 else "Rejected"}\n```'
FAILS = '```python\nanswer = {"refund_decision": data["no_such_field"]}\n```'


def _verified(replies: list[str], agent: dict | None) -> tuple:
    model = _Recording(messages=iter(AIMessage(x) for x in replies))
    model.asked = []
    decision = asyncio.run(decide_verified(model, SOP, {}, _conversation(), ALLOWED, agent))
    quoted = [QUOTE.strip() in m[1].content for m, _ in model.asked]  # m[1]: the prompt
    return decision, quoted


def test_abstaining_answers_decide_nothing():
    assert abstains(None) and abstains({"hazard_class": "Unable to Decide"})
    assert abstains({"enforcement_action": "Inconclusive"})
    assert not abstains({"hazard_class": "Hazard Class B"})
    assert not abstains({"refund_decision": "Rejected", "note": "refund approved"})


def test_verify_keeps_a_decided_agent_answer_the_quoted_code_alone_contradicts():
    approved = {"refund_decision": "Approved"}
    # the quoted code says Rejected, the plain code Approved: no agreement, the agent stands
    decision, quoted = _verified([REJECT, APPROVE], approved)
    assert (decision.by, decision.answer, quoted) == ("agent", None, [True, False])
    assert "disagree" in decision.why and len(decision.steps) == 2
    # both say Rejected: the agent's Approved is replaced
    decision, quoted = _verified([REJECT, REJECT], approved)
    assert (decision.by, decision.answer) == ("code", {"refund_decision": "Rejected"})
    assert "agree against the agent" in decision.why
    assert decision.attempts == 2 and [s["answer"] for s in decision.steps] == [decision.answer] * 2
    # the quoted code agrees with the agent: the plain code is never asked
    decision, quoted = _verified([APPROVE], approved)
    assert (decision.by, quoted) == ("agent", [True])
    # the quoted code fails twice: the agent stands, nothing more is asked
    decision, quoted = _verified([FAILS, FAILS], approved)
    assert (decision.by, quoted, len(decision.errors)) == ("agent", [True, True], 2)
    assert "KeyError" in decision.errors[0]


def test_verify_takes_the_code_answer_where_the_agent_decided_nothing():
    unable = {"refund_decision": "Unable to Decide"}
    decision, quoted = _verified([REJECT], unable)
    assert (decision.by, decision.answer, quoted) == (
        "code",
        {"refund_decision": "Rejected"},
        [True],
    )
    # the quoted code gives nothing usable: the plain code is asked, its answer taken
    decision, quoted = _verified([FAILS, FAILS, REJECT], unable)
    assert (decision.answer, quoted) == ({"refund_decision": "Rejected"}, [True, True, False])
    assert [s["by"] for s in decision.steps] == ["agent", "code"]
    decision, _ = _verified([FAILS, FAILS, FAILS, FAILS], unable)
    assert (decision.by, decision.answer, decision.attempts) == ("agent", None, 4)
