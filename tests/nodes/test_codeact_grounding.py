"""The host holds a CodeAct answer to what the code printed."""

from __future__ import annotations

import contextlib
import io
import json

from sopgraph.nodes.codeact_grounding import ground, printed_numbers, states_percent

ANSWER = '{"observed": 0.43, "comparison": ">", "threshold": 25, "explanation": "x"}'


def test_printed_numbers_are_the_numbers_not_ids_or_words():
    assert printed_numbers("[{'avg(x)': 0.82, 'n': 3}] ST03 -1.5 true 2e-3") == [
        0.82, 3.0, -1.5, 0.002,
    ]  # fmt: skip
    assert printed_numbers("true") == [] and printed_numbers("") == []


def test_a_value_printed_nowhere_gives_way_to_the_one_printed():
    text, notes = ground(ANSWER, "48.666667\n", "print(idle)", percent=True)
    assert json.loads(text)["observed"] == 48.666667
    assert notes == ["observed 0.43 was printed nowhere: the number printed, 48.6667, is taken"]
    # printed (to the shown precision): unchanged; several numbers printed: no way to choose
    assert ground(ANSWER, "0.4300001", "x", True) == (ANSWER, [])
    assert ground(ANSWER, "48.7 12.0", "x", True) == (ANSWER, [])
    # no measured answer, or no value: unchanged
    assert ground("ANSWER: true", "5", "x", True) == ("ANSWER: true", [])
    none = '{"observed": null, "comparison": ">", "threshold": 25}'
    assert ground(none, "5", "x", True) == (none, [])


def test_a_ratio_against_a_percentage_is_read_as_a_percentage():
    answer = '{"observed": 0.87925, "comparison": ">", "threshold": 80, "explanation": "x"}'
    code = "r1 = q(sql='SELECT avg(belt_ne_fill_ratio) FROM conveyance_5m')"
    text, notes = ground(answer, "0.8282 0.87925", code, percent=True)
    assert json.loads(text)["observed"] == 87.925 and "a ratio (0-1)" in notes[0]
    # not a percentage check, no ratio read, or a value already scaled: unchanged
    assert ground(answer, "0.87925", code, percent=False) == (answer, [])
    assert ground(answer, "0.87925", "r1 = q(metric='x_pct')", percent=True) == (answer, [])
    scaled = answer.replace("0.87925", "87.925")
    assert ground(scaled, "87.925", code, percent=True) == (scaled, [])


def test_a_percentage_is_read_from_the_check_text():
    assert states_percent("more than 80% full") and states_percent("below 70 % of plan")
    assert not states_percent("at least 3 jams in the last 30 minutes")


# the camera check of alarm ALM-001196 (live, 2026-11-29): the code read 3.14% and failed on
# a verdict of its own; nothing was printed and the model answered a demonstration's 1.95
FAILING = """r1 = robotics_execute_query(query='avg_over_time(camera_read_fail_pct{s="ST02"}[15m])')
fail = sum(series_values(r1))
value = fail

# Check if the value is more than 3%
if value > (camera_alarm_pct * 0.03):
    verdict = "true"
print(value)"""


def test_the_value_is_printed_where_it_is_computed():
    import contextlib
    import io

    from sopgraph.nodes.codeact_grounding import hold_value

    held, notes = hold_value(FAILING)
    assert notes == ["print(value) added after line 3: the value shows even if a later line fails"]
    assert held.splitlines()[2:4] == ["value = fail", "print(value)"]
    result = {"data": {"result": [{"value": [0, "3.143333"]}]}}
    namespace = {
        "robotics_execute_query": lambda **_: result,
        "series_values": lambda r: [float(s["value"][1]) for s in r["data"]["result"]],
    }
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(NameError):
        exec(held, namespace)  # the failure is still there, after the value
    assert printed_numbers(out.getvalue()) == [3.143333]
    answer = '{"observed": 1.948333, "comparison": ">", "threshold": 3}'
    assert json.loads(ground(answer, out.getvalue(), held, True)[0])["observed"] == 3.143333
    # printed there already, or no value: unchanged
    assert hold_value("value = 2\nprint(value)\nx = 1") == ("value = 2\nprint(value)\nx = 1", [])
    assert hold_value("print(1)") == ("print(1)", [])


def test_the_value_is_held_only_from_level_2():
    from sopgraph.nodes.codeact import CodeActRun, hold_code
    from sopgraph.nodes.sandbox import SandboxLimits

    reply = f"```python\n{FAILING}\n```"

    def run(level: int) -> CodeActRun:
        return CodeActRun(None, {}, {}, SandboxLimits(), grounded=True, constrained=level)  # type: ignore[arg-type]

    assert hold_code(run(1), reply) == (reply, [])
    text, notes = hold_code(run(2), reply)
    assert "value = fail\nprint(value)\n" in text and len(notes) == 1


def test_level_4_the_answer_reports_the_value_the_code_ended_with():
    from sopgraph.nodes.codeact_grounding import MARK, VALUE_CAPTURE, hold_observed, split_value

    shown, value = split_value(f"[{{'jams': 5}}]\n0\n{MARK} 0\n")
    assert (shown, value) == ("[{'jams': 5}]\n0\n", 0.0)
    assert split_value(f"x\n{MARK} None\n") == ("x\n", None)
    assert split_value(f"{MARK} 'high'\n") == ("", None)
    assert split_value("no mark\n") == ("no mark\n", None)
    # the capture runs after the code, and says nothing when there is no value
    for code, want in (("value = 3 * 2", 6.0), ("x = 1", None), ("value = float('nan')", None)):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(code + VALUE_CAPTURE, {})  # noqa: S102 - the test's own code
        assert split_value(out.getvalue())[1] == want
    answer = '{"observed": 5, "comparison": ">=", "threshold": 3, "explanation": "x"}'
    held, notes = hold_observed(answer, 0.0)
    assert json.loads(held)["observed"] == 0 and notes == [
        "observed 5 is not the value the code ended with: 0 is taken"
    ]
    # the same value, or it as a percentage: unchanged
    assert hold_observed(answer, 5.0) == (answer, [])
    assert hold_observed(answer, 0.05) == (answer, [])
    assert hold_observed("no json", 1.0) == ("no json", [])


def test_an_answer_still_printed_nowhere_measures_nothing():
    from sopgraph.nodes.codeact_grounding import unmeasured, unprinted

    answer = '{"observed": 6, "comparison": ">=", "threshold": 6, "explanation": "x"}'
    assert unprinted(answer, "") == 6.0 and unprinted(answer, "[{'n': 6}]") is None
    assert unprinted(answer, "0.06") is None and unprinted(answer, "600") is None  # percent
    held, notes = unmeasured(answer)
    assert json.loads(held)["observed"] is None and notes == [
        "observed 6 is still no number the code printed: no value"
    ]
    assert unmeasured('{"observed": null}') == ('{"observed": null}', [])
    assert unprinted('{"observed": null}', "") is None and unprinted("text", "") is None
